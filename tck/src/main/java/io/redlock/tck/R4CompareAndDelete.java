package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R4 Compare-and-delete: release deletes a key only if it holds the caller's token. */
interface R4CompareAndDelete {

  /**
   * R4.1: release with a wrong token answers false and changes nothing: the owner still holds the
   * key.
   *
   * <p>If this fails, check that the delete compares the token in the same atomic step (Redis: a
   * Lua script {@code if GET == token then DEL}; SQL: {@code DELETE ... WHERE key = ? AND token =
   * ?}), not a plain {@code DEL}.
   */
  @Test
  @DisplayName("R4.1 a wrong token does not delete the key and answers false")
  default void r4_1_wrongTokenIsNoOp(Harness h) {
    String key = h.key("r4.1");
    String owner = token();
    assertTrue(h.acquire(key, owner, LONG_TTL), "R4.1: tryAcquire of an absent key");
    assertFalse(h.release(key, token()), "R4.1: release with a wrong token must answer false");
    h.assertHeldBy(key, owner, "R4.1: after a release with a wrong token,");
    assertTrue(h.release(key, owner), "R4.1: the owner's release afterwards");
  }

  /**
   * R4.2: release with the right token deletes the key and answers true; a second release answers
   * false.
   *
   * <p>If this fails, check the answer mapping: Redis {@code EVAL} returns 1 or 0, SQL the
   * affected-row count; the node must answer true only when it deleted.
   */
  @Test
  @DisplayName("R4.2 the right token deletes the key and answers true, once")
  default void r4_2_rightTokenDeletes(Harness h) {
    String key = h.key("r4.2");
    String owner = token();
    assertTrue(h.acquire(key, owner, LONG_TTL), "R4.2: tryAcquire of an absent key");
    assertTrue(h.release(key, owner), "R4.2: release with the owner's token must answer true");
    h.inspector()
        .ifPresent(
            backdoor ->
                assertThat(backdoor.inspect(key))
                    .as("R4.2: the key read through the backdoor after release")
                    .isEmpty());
    assertFalse(h.release(key, owner), "R4.2: a second release of the same key must answer false");
    h.assertAbsent(key, "R4.2: after release");
  }

  /**
   * R4.3: release of a key that does not exist answers false and creates nothing.
   *
   * <p>If this fails, check that an absent key is answered false, not true and not an exception.
   */
  @Test
  @DisplayName("R4.3 release of an absent key answers false")
  default void r4_3_releaseOfAbsentKey(Harness h) {
    String key = h.key("r4.3");
    assertFalse(h.release(key, token()), "R4.3: release of a key that was never acquired");
    h.assertAbsent(key, "R4.3: after releasing a key that was never acquired");
  }

  /**
   * R4.4: after a key expired and another token acquired it, the old token's release answers false
   * and the new owner keeps the key.
   *
   * <p>If this fails, the delete is not comparing the token, or compares it against a stale copy:
   * check that token comparison and delete are one atomic step on the server.
   */
  @Test
  @DisplayName("R4.4 the old token cannot delete the new owner's key after expiry")
  default void r4_4_oldTokenCannotDeleteNewOwnersKey(Harness h) {
    h.assertOldOwnerRefused("R4.4", "release", h::release);
  }

  /**
   * R4.5: ownership is the token, not the connection: a separate node instance that knows the token
   * can extend and release the key.
   *
   * <p>If this fails, check that the node does not tie keys to its own session (a database session
   * lock, a client id stored next to the token, an in-memory map of what it acquired).
   */
  @Test
  @DisplayName("R4.5 any node instance that has the token can extend and release the key")
  default void r4_5_tokenIsOwnership(Harness h) {
    LockNode other = h.newNode();
    String key = h.key("r4.5");
    String owner = token();
    assertTrue(h.acquire(key, owner, LONG_TTL), "R4.5: tryAcquire of an absent key");
    assertTrue(
        h.extend(other, key, owner, LONG_TTL),
        "R4.5: extend through another node instance with the owner's token");
    assertTrue(
        h.release(other, key, owner),
        "R4.5: release through another node instance with the owner's token");
    h.assertAbsent(key, "R4.5: after release through another node instance");
  }

  /**
   * R4.6: compare-and-delete is one atomic step even at the key's expiry: the old owner's late
   * release, racing other clients that acquire the key the moment it expires, never deletes the key
   * one of them acquired. Raced in rounds, at moments spread around the expiry.
   *
   * <p>If this fails, the release reads and then deletes: a {@code GET} followed by {@code DEL}, a
   * {@code SELECT} followed by {@code DELETE ... WHERE key = ?}. Between the two the key can expire
   * and be taken; put the token comparison into the delete itself (the algorithm's Lua script;
   * {@code DELETE ... WHERE key = ? AND token = ?}).
   */
  @Test
  @DisplayName("R4.6 a release racing a takeover at expiry never deletes the new owner's key")
  default void r4_6_releaseIsAtomicAtExpiry(Harness h) throws InterruptedException {
    for (Race.Takeover round : Race.atExpiry(h, "R4.6", h::release)) {
      assertThat(round.takers())
          .as(
              "R4.6: clients that acquired the key while the old owner's release raced them (%s);"
                  + " a second one means the old owner deleted the new owner's key",
              round)
          .hasSizeLessThanOrEqualTo(1);
      for (String taker : round.takers()) {
        assertTrue(
            h.release(round.key(), taker),
            "R4.6: the new owner's release after the old owner's release raced its acquire"
                + " (%s): the old owner deleted the new owner's key",
            round);
      }
    }
  }
}
