package io.redlock.tck;

import static io.redlock.tck.Harness.*;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R1 Conditional insert: tryAcquire sets a key only if it is absent. */
interface R1ConditionalInsert {

  @Test
  @DisplayName("R1.1 an absent key is acquired and then held by the caller's token")
  default void r1_1_absentKeyIsAcquired(Harness h) {
    String owner = token();
    String key = h.heldKey("R1.1", owner);
    h.assertHeldBy(key, owner, "R1.1");
    assertTrue(h.release(key, owner), "R1.1: the owner's release of the key it just acquired");
  }

  @Test
  @DisplayName("R1.2 a held key is not acquired by another token, and its holder keeps it")
  default void r1_2_heldKeyIsNotAcquiredByAnotherToken(Harness h) {
    heldKeyRefused(h, "R1.2", false, "tryAcquire of a key held by another token");
  }

  @Test
  @DisplayName("R1.3 a held key is not acquired again by its own token (not re-entrant)")
  default void r1_3_notReentrant(Harness h) {
    heldKeyRefused(h, "R1.3", true, "a second tryAcquire by the same token");
  }

  @Test
  @DisplayName("R1.4 after release the key can be acquired again by another token")
  default void r1_4_reacquireAfterRelease(Harness h) {
    String first = token();
    String key = h.heldKey("R1.4", first);
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
    String owner = token();
    String key = h.heldKey(rule, owner);
    assertFalse(
        h.acquire(key, sameToken ? owner : token(), LONG_TTL),
        "%s: %s must answer acquired=false",
        rule,
        what);
    h.assertHeldBy(key, owner, rule);
    assertTrue(h.release(key, owner), "%s: the holder's release after the second attempt", rule);
  }
}
