package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static io.redlock.tck.Texts.*;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R6 Key isolation: distinct keys are distinct locks. */
interface R6KeyIsolation {

  @Test
  @DisplayName("R6.1 locks on different keys do not interfere")
  default void r6_1_differentKeys(Harness h) {
    String ownerA = token();
    String ownerB = token();
    String a = h.heldKey("R6.1", ownerA);
    String b = h.heldKey("R6.1", ownerB); // a second key while the first is held
    assertFalse(h.release(b, ownerA), "R6.1: release of key B with key A's token");
    assertFalse(h.extend(b, ownerA, LONG_TTL), "R6.1: extend of key B with key A's token");
    assertTrue(h.release(a, ownerA), "R6.1: release of key A by its owner");
    h.assertHeldBy(b, ownerB, "R6.1: after key A was released,");
    assertTrue(h.release(b, ownerB), "R6.1: release of key B by its owner");
  }

  @Test
  @DisplayName("R6.2 keys that are prefixes or patterns of each other are independent")
  default void r6_2_prefixesAndPatterns(Harness h) {
    String base = h.key("r6.2");
    String stem = base.substring(0, base.length() - 1);
    List<String> others =
        List.of(
            base + ":",
            base + ":child",
            base + "x",
            stem,
            base + "*",
            base + "%",
            stem + "_",
            stem + "?",
            stem + "%",
            stem + "*");
    String owner = token();
    assertThat(h.acquire(base, owner, LONG_TTL)).isTrue();
    Map<String, String> owners = new java.util.LinkedHashMap<>();
    SoftAssertions soft = new SoftAssertions();
    for (String other : others) {
      String t = token();
      owners.put(other, t);
      soft.assertThat(h.acquire(other, t, LONG_TTL))
          .as("R6.2: acquire '%s' while '%s' is held", other, base)
          .isTrue();
      soft.assertThat(h.release(other, owner))
          .as("R6.2: release '%s' with the token of '%s'", other, base)
          .isFalse();
    }
    soft.assertAll();
    h.assertHeldBy(base, owner, "R6.2: after acquiring keys that extend or match it,");
    assertThat(h.release(base, owner)).isTrue();
    for (Map.Entry<String, String> e : owners.entrySet()) {
      h.assertHeldBy(e.getKey(), e.getValue(), "R6.2: after '" + base + "' was released,");
    }
  }

  @Test
  @DisplayName("R6.3 keys differing only in case, trailing space or normalization are distinct")
  default void r6_3_exactComparison(Harness h) {
    String base = h.key("r6.3");
    List<List<String>> pairs =
        List.of(
            List.of(base + "-lock", base + "-LOCK"),
            List.of(base + "-a", base + "-a "),
            List.of(base + "-\u00e9", base + "-e\u0301"),
            List.of(base + "-A", base + "-\uFF21"),
            List.of(base + "-ss", base + "-\u00df"));
    assertDistinct(h, "R6.3", pairs);
  }

  @Test
  @DisplayName("R6.4 keys of 1 KiB that differ only in their last character are distinct")
  default void r6_4_longKeysAreNotTruncated(Harness h) {
    String ascii = padTo(h.key("r6.4") + ":", "k", 1023);
    String lock = "\uD83D\uDD12"; // U+1F512, 4 bytes in UTF-8
    String wide = padTo(h.key("r6.4") + ":", lock, 1020);
    assertDistinct(
        h,
        "R6.4",
        List.of(
            List.of(ascii + "a", ascii + "b"),
            List.of(wide + lock, wide + "\uD83D\uDD13"))); // ... U+1F513, the open lock
  }

  @Test
  @DisplayName("R6.5 keys with equal 32-bit hashes (hashCode, CRC-32) are distinct")
  default void r6_5_hashCollisionsAreDistinct(Harness h) {
    String base = h.key("r6.5") + ":";
    assertDistinct(
        h,
        "R6.5",
        List.of(
            List.of(base + "Aa", base + "BB"),
            List.of(base + "AaAaAa", base + "BBBBBB"),
            List.of(base + "AaBBAa", base + "BBAaBB"),
            // Equal CRC-32 (0xc0503ef3) for any common prefix: CRC is linear in its input.
            List.of(base + "iTjH0lNb", base + "mbyj3bEy")));
  }

  /**
   * Each pair: the first key held, the second is acquired too, and the first key's token cannot
   * release it.
   */
  private void assertDistinct(Harness h, String rule, List<List<String>> pairs) {
    SoftAssertions soft = new SoftAssertions();
    for (List<String> pair : pairs) {
      String first = token();
      assertThat(h.acquire(pair.get(0), first, LONG_TTL)).isTrue();
      soft.assertThat(h.acquire(pair.get(1), token(), LONG_TTL))
          .as(
              "%s: acquire %s while %s is held (different strings, so different keys)",
              rule, shortly(pair.get(1)), shortly(pair.get(0)))
          .isTrue();
      soft.assertThat(h.release(pair.get(1), first))
          .as(
              "%s: release %s with the token of %s",
              rule, shortly(pair.get(1)), shortly(pair.get(0)))
          .isFalse();
    }
    soft.assertAll();
  }

  /** A key for messages: spelled out with {@link #visible}, long ones by their ends only. */
  private static String shortly(String key) {
    String v = visible(key);
    return v.length() <= 120 ? v : v.substring(0, 40) + "..." + v.substring(v.length() - 60);
  }
}
