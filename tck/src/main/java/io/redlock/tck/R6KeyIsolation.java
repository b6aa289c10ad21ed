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

  /**
   * R6.1: locks on different keys do not interfere: each is acquired, extended and released on its
   * own, and a token of one key has no power over another.
   *
   * <p>If this fails, check that every statement filters by the key (a missing {@code WHERE key =
   * ?}, a script that uses a constant key, a table with one row).
   */
  @Test
  @DisplayName("R6.1 locks on different keys do not interfere")
  default void r6_1_differentKeys(Harness h) {
    String a = h.key("r6.1-a");
    String b = h.key("r6.1-b");
    String ownerA = token();
    String ownerB = token();
    assertTrue(h.acquire(a, ownerA, LONG_TTL), "R6.1: tryAcquire of key A");
    assertTrue(h.acquire(b, ownerB, LONG_TTL), "R6.1: a second key while the first is held");
    assertFalse(h.release(b, ownerA), "R6.1: release of key B with key A's token");
    assertFalse(h.extend(b, ownerA, LONG_TTL), "R6.1: extend of key B with key A's token");
    assertTrue(h.release(a, ownerA), "R6.1: release of key A by its owner");
    h.assertHeldBy(b, ownerB, "R6.1: after key A was released,");
    assertTrue(h.release(b, ownerB), "R6.1: release of key B by its owner");
  }

  /**
   * R6.2: keys that are prefixes of each other, or that look like patterns matching each other
   * ({@code *}, {@code ?}, {@code %}, {@code _}), are independent keys.
   *
   * <p>If this fails, check for {@code LIKE}, {@code KEYS}/{@code SCAN} patterns or regular
   * expressions where an exact comparison belongs, and for keys truncated to a column width.
   */
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

  /**
   * R6.3: keys that differ only in letter case, a trailing space, Unicode normalization, width or a
   * German sharp s are different keys.
   *
   * <p>If this fails, the key column compares with a collation instead of exactly: use a binary,
   * no-pad comparison (PostgreSQL {@code COLLATE "C"} or {@code bytea}; MariaDB/MySQL {@code
   * VARBINARY} or {@code utf8mb4_nopad_bin}; SQL Server a {@code _BIN2} collation), and do not
   * normalize, trim or case-fold keys in the node.
   */
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

  /**
   * R6.4: keys of 1 KiB that differ only in their last character (ASCII, and 4-byte UTF-8
   * characters) are different keys.
   *
   * <p>If this fails, keys are cut short: a column narrower than the contract's 1 KiB ({@code
   * varchar(255)}, MySQL's 767- or 3072-byte index prefixes), or a node that truncates keys to fit.
   * Widen the column ({@code text}, {@code varbinary(4096)}), or store a cryptographic hash of the
   * whole key (SHA-256), never a prefix.
   */
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

  /**
   * R6.5: keys whose 32-bit hashes are equal are different keys: pairs with equal {@code
   * String.hashCode()} ("Aa" and "BB", and longer ones) and with equal CRC-32.
   *
   * <p>If this fails, the node stores or locks a 32-bit hash of the key instead of the key ({@code
   * key.hashCode()}, an advisory-lock id, a CRC): with a few tens of thousands of keys two of them
   * collide, and then one lock excludes the other's holders or, worse, one token releases another
   * key. Store the key itself, or a cryptographic hash of it (SHA-256).
   */
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
