package io.redlock.tck;

import static io.redlock.tck.Harness.*;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R1 Conditional insert: tryAcquire sets a key only if it is absent. */
interface R1ConditionalInsert {

  /**
   * R1.1: an absent key is acquired, and then holds the caller's token.
   *
   * <p>If this fails, check that tryAcquire writes the key with the given token and reports {@code
   * acquired=true} when it did (Redis: {@code SET key token NX PX ttl} answers {@code OK}; SQL: one
   * row inserted or updated).
   */
  @Test
  @DisplayName("R1.1 an absent key is acquired and then held by the caller's token")
  default void r1_1_absentKeyIsAcquired(Harness h) {
    String key = h.key("r1.1");
    String owner = token();
    assertTrue(h.acquire(key, owner, LONG_TTL), "R1.1: tryAcquire of an absent key");
    h.assertHeldBy(key, owner, "R1.1");
    assertTrue(h.release(key, owner), "R1.1: the owner's release of the key it just acquired");
  }

  /**
   * R1.2: a key held by one token is not acquired by another, and the holder keeps it.
   *
   * <p>If this fails, check the "unless the key exists and has not expired" condition: the insert
   * must not overwrite a live key (Redis {@code NX}; SQL {@code ON CONFLICT ... WHERE expired}).
   */
  @Test
  @DisplayName("R1.2 a held key is not acquired by another token, and its holder keeps it")
  default void r1_2_heldKeyIsNotAcquiredByAnotherToken(Harness h) {
    heldKeyRefused(h, "R1.2", false, "tryAcquire of a key held by another token");
  }

  /**
   * R1.3: a held key is not acquired again by its own token: the insert is not re-entrant.
   *
   * <p>If this fails, check that the condition is "key absent or expired", not "key absent or held
   * by this token". Re-entrance belongs to the engine, not the node.
   */
  @Test
  @DisplayName("R1.3 a held key is not acquired again by its own token (not re-entrant)")
  default void r1_3_notReentrant(Harness h) {
    heldKeyRefused(h, "R1.3", true, "a second tryAcquire by the same token");
  }

  /**
   * R1.4: after release the key is absent and can be acquired by anyone.
   *
   * <p>If this fails, check that release really deletes the key (or marks it expired in a way that
   * tryAcquire treats as absent).
   */
  @Test
  @DisplayName("R1.4 after release the key can be acquired again by another token")
  default void r1_4_reacquireAfterRelease(Harness h) {
    String key = h.key("r1.4");
    String first = token();
    assertTrue(h.acquire(key, first, LONG_TTL), "R1.4: tryAcquire of an absent key");
    assertTrue(h.release(key, first), "R1.4: release by the holder");
    String second = token();
    assertTrue(h.acquire(key, second, LONG_TTL), "R1.4: tryAcquire after the holder released");
    h.assertHeldBy(key, second, "R1.4");
  }

  /**
   * A held key is not acquired by a second tryAcquire (of another token or of the holder's own),
   * and its holder keeps it.
   */
  private void heldKeyRefused(Harness h, String rule, boolean sameToken, String what) {
    String key = h.key(rule.toLowerCase(java.util.Locale.ROOT));
    String owner = token();
    assertTrue(h.acquire(key, owner, LONG_TTL), "%s: tryAcquire of an absent key", rule);
    assertFalse(
        h.acquire(key, sameToken ? owner : token(), LONG_TTL),
        "%s: %s must answer acquired=false",
        rule,
        what);
    h.assertHeldBy(key, owner, rule);
    assertTrue(h.release(key, owner), "%s: the holder's release after the second attempt", rule);
  }
}
