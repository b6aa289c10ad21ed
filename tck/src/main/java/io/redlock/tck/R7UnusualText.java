package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static io.redlock.tck.Texts.*;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.stream.Stream;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** R7 Unusual keys and tokens: any Unicode text round-trips exactly. */
interface R7UnusualText {

  /** The unusual strings of R7.1 and R7.2, each with a readable name. */
  static Stream<Named<String>> unusualStrings() {
    return Stream.of(
        Named.of("Cyrillic", "\u0437\u0430\u043c\u043e\u043a"),
        Named.of("CJK", "\u9501\u5b9a\u8cc7\u6e90"),
        Named.of("emoji with variation selector", "\uD83D\uDD12\uD83D\uDDDD\uFE0F"),
        Named.of("emoji ZWJ sequence", "\uD83D\uDC69\u200D\uD83D\uDCBB"),
        Named.of("non-BMP letters", "\uD835\uDD18\uD835\uDD2B\uD835\uDD26 \uD800\uDF48"),
        Named.of("combining marks", "e\u0301 a\u0308 Z\u0335\u0321\u0354"),
        Named.of("right-to-left text", "\u05de\u05e4\u05ea\u05d7 \u0645\u0641\u062a\u0627\u062d"),
        Named.of("single quote", "it's"),
        Named.of("double quotes", "\"quoted\""),
        Named.of("SQL injection", "x'; DROP TABLE redlock_locks; --"),
        Named.of("SQL comment and wildcards", "a /* b */ 100% _done_ # c"),
        Named.of("JSON", "{\"$gt\": \"\", \"a\": [1, null], \"b\": {}}"),
        Named.of("MongoDB operators", "$where.$set"),
        Named.of("Lua pattern metacharacters", "^$()%.[]*+-? %s %d %%"),
        Named.of("Lua long brackets", "]]--[[ ]=] [==["),
        Named.of("backslashes", "C:\\path\\to\\lock \\n \\\\ \\u0000"),
        Named.of("braces, dollars and percents", "${jndi:ldap://x} {0} $1 %(name)s"),
        Named.of("only punctuation", "'\";--\\{}$%"),
        Named.of("leading and trailing spaces", "  spaced out  "),
        Named.of("newlines and tabs", "line1\nline2\r\nline3\ttabbed"),
        Named.of("Redis protocol", "*1\r\n$4\r\nPING\r\n"),
        Named.of("glob", "*?[a-z]"));
  }

  @ParameterizedTest(name = "R7.1 a key with {0} round-trips")
  @MethodSource("io.redlock.tck.R7UnusualText#unusualStrings")
  @DisplayName("R7.1 keys with unusual characters round-trip")
  default void r7_1_unusualKeys(String text, Harness h) {
    roundTrip(h, h.key("r7.1") + ":" + text, token(), "R7.1");
  }

  @ParameterizedTest(name = "R7.2 a token with {0} round-trips")
  @MethodSource("io.redlock.tck.R7UnusualText#unusualStrings")
  @DisplayName("R7.2 tokens with unusual characters round-trip")
  default void r7_2_unusualTokens(String text, Harness h) {
    roundTrip(h, h.key("r7.2"), token() + ":" + text, "R7.2");
  }

  @Test
  @DisplayName("R7.3 a key and a token of 1 KiB of ASCII round-trip")
  default void r7_3_oneKibAscii(Harness h) {
    String key = padTo(h.key("r7.3") + ":", "k", 1024);
    String token = padTo(token() + ":", "t", 1024);
    assertThat(key).hasSize(1024);
    roundTrip(h, key, token, "R7.3");
  }

  @Test
  @DisplayName("R7.4 a key and a token of 1 KiB of 4-byte UTF-8 characters round-trip")
  default void r7_4_oneKibOfFourByteCharacters(Harness h) {
    String lock = "\uD83D\uDD12"; // U+1F512, 4 bytes in UTF-8
    String key = padTo(h.key("r7.4") + ":", lock, 1024);
    String token = padTo(token() + ":", lock, 1024);
    assertThat(key.getBytes(java.nio.charset.StandardCharsets.UTF_8)).hasSizeLessThan(1025);
    roundTrip(h, key, token, "R7.4");
  }

  @Test
  @DisplayName("R7.5 tokens are compared exactly, not case- or normalization-insensitively")
  default void r7_5_tokensComparedExactly(Harness h) {
    String base = token();
    List<List<String>> pairs =
        List.of(
            List.of(base + "-Owner", base + "-owner"),
            List.of(base + "-t", base + "-t "),
            List.of(base + "-\u00e9", base + "-e\u0301"),
            List.of(base + "-A", base + "-\uFF21"));
    SoftAssertions soft = new SoftAssertions();
    for (List<String> pair : pairs) {
      String key = h.key("r7.5");
      assertThat(h.acquire(key, pair.get(0), LONG_TTL)).isTrue();
      soft.assertThat(h.extend(key, pair.get(1), LONG_TTL))
          .as("R7.5: extend with %s of a key held by %s", visible(pair.get(1)), pair.get(0))
          .isFalse();
      soft.assertThat(h.release(key, pair.get(1)))
          .as("R7.5: release with %s of a key held by %s", visible(pair.get(1)), pair.get(0))
          .isFalse();
      soft.assertThat(h.release(key, pair.get(0)))
          .as("R7.5: release by the real owner %s", pair.get(0))
          .isTrue();
    }
    soft.assertAll();
  }

  private void roundTrip(Harness h, String key, String owner, String rule) {
    SoftAssertions soft = new SoftAssertions();
    soft.assertThat(h.acquire(key, owner, LONG_TTL))
        .as("%s: tryAcquire of an absent key", rule)
        .isTrue();
    h.inspector()
        .ifPresent(
            backdoor ->
                soft.assertThat(backdoor.inspect(key).map(KeyInspector.KeyState::owner))
                    .as("%s: the token stored under the key, read through the backdoor", rule)
                    .contains(owner));
    soft.assertThat(h.acquire(key, token(), LONG_TTL))
        .as("%s: tryAcquire by another token while held", rule)
        .isFalse();
    soft.assertThat(h.extend(key, owner, LONG_TTL)).as("%s: extend by the owner", rule).isTrue();
    soft.assertThat(h.release(key, token())).as("%s: release by another token", rule).isFalse();
    soft.assertThat(h.release(key, owner)).as("%s: release by the owner", rule).isTrue();
    soft.assertThat(h.release(key, owner)).as("%s: a second release by the owner", rule).isFalse();
    soft.assertAll();
  }
}
