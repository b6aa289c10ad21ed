package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R4 Compare-and-delete: release deletes a key only if it holds the caller's token. */
interface R4CompareAndDelete {

  @Test
  @DisplayName("R4.1 a wrong token does not delete the key and answers false")
  default void r4_1_wrongTokenIsNoOp(Harness h) {
    String owner = token();
    String key = h.heldKey("R4.1", owner);
    assertFalse(h.release(key, token()), "R4.1: release with a wrong token must answer false");
    h.assertHeldBy(key, owner, "R4.1: after a release with a wrong token,");
    assertTrue(h.release(key, owner), "R4.1: the owner's release afterwards");
  }

  @Test
  @DisplayName("R4.2 the right token deletes the key and answers true, once")
  default void r4_2_rightTokenDeletes(Harness h) {
    String owner = token();
    String key = h.heldKey("R4.2", owner);
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

  @Test
  @DisplayName("R4.3 release of an absent key answers false")
  default void r4_3_releaseOfAbsentKey(Harness h) {
    String key = h.key("r4.3");
    assertFalse(h.release(key, token()), "R4.3: release of a key that was never acquired");
    h.assertAbsent(key, "R4.3: after releasing a key that was never acquired");
  }

  @Test
  @DisplayName("R4.4 the old token cannot delete the new owner's key after expiry")
  default void r4_4_oldTokenCannotDeleteNewOwnersKey(Harness h) {
    h.assertOldOwnerRefused("R4.4", "release", h::release);
  }

  @Test
  @DisplayName("R4.5 any node instance that has the token can extend and release the key")
  default void r4_5_tokenIsOwnership(Harness h) {
    LockNode other = h.newNode();
    String owner = token();
    String key = h.heldKey("R4.5", owner);
    assertTrue(
        h.extend(other, key, owner, LONG_TTL),
        "R4.5: extend through another node instance with the owner's token");
    assertTrue(
        h.release(other, key, owner),
        "R4.5: release through another node instance with the owner's token");
    h.assertAbsent(key, "R4.5: after release through another node instance");
  }

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
