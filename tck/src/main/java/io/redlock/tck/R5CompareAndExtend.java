package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R5 Compare-and-extend: extend moves the expiry only for the owner of a live key. */
interface R5CompareAndExtend {

  @Test
  @DisplayName("R5.1 a wrong token cannot extend the key, and its expiry does not move")
  default void r5_1_onlyOwnerExtends(Harness h) {
    Duration ttl = h.ttl(SHORT_TTL);
    String owner = token();
    String key = h.heldKey("R5.1", owner, ttl);
    long acquired = System.nanoTime();
    assertFalse(
        h.extend(key, token(), LONG_TTL), "R5.1: extend with a wrong token must answer false");
    h.inspector()
        .flatMap(backdoor -> backdoor.inspect(key))
        .ifPresent(
            state ->
                assertThat(state.owner())
                    .as("R5.1: owner after a wrong-token extend, read through the backdoor")
                    .isEqualTo(owner));
    h.sleepPastExpiry(acquired, ttl);
    h.assertAbsent(key, "R5.1: at its original expiry, after a wrong-token extend");
  }

  @Test
  @DisplayName("R5.2 an expired key cannot be extended, even by its old owner")
  default void r5_2_notAfterExpiry(Harness h) {
    Duration ttl = h.ttl(SHORT_TTL);
    String owner = token();
    String key = h.heldKey("R5.2", owner, ttl);
    h.sleepPastExpiry(System.nanoTime(), ttl);
    assertFalse(h.extend(key, owner, LONG_TTL), "R5.2: extend by the old owner after its TTL");
    h.assertAbsent(key, "R5.2: after an extend of an expired key");
  }

  @Test
  @DisplayName("R5.3 an extended key is held past its original expiry, until now + the new TTL")
  default void r5_3_extendCountsFromNow(Harness h) {
    // Several precision steps, so that the key is surely held when it is extended halfway.
    Duration ttl = h.ttl(max(SHORT_TTL, h.precision().multipliedBy(3)));
    // Long enough to be held, by its own measure, well after the original expiry has passed.
    Duration longer =
        h.ttl(
            ttl.plus(h.precision().multipliedBy(2))
                .plus(h.kit().expiryTolerance().multipliedBy(2)));
    for (int attempt = 0; attempt < 3; attempt++) {
      String key = h.key("r5.3-" + attempt);
      String owner = token();
      long start = System.nanoTime();
      assertTrue(h.acquire(key, owner, ttl), "R5.3: tryAcquire of an absent key");
      long acquired = System.nanoTime();
      sleepUntil(start + ttl.toNanos() / 2);
      long extendStart = System.nanoTime();
      boolean extended = h.extend(key, owner, longer);
      long extendEnd = System.nanoTime();
      if (extendEnd - h.heldUntil(start, ttl) > 0) {
        continue; // Too close to the TTL to judge on this machine; try again with a fresh key.
      }
      assertTrue(extended, "R5.3: the owner's extend of a live key must answer true");
      h.sleepPastExpiry(acquired, ttl);
      h.assertHeldInTime(key, extendStart, longer, "past its original expiry", "R5.3");
      h.sleepPastExpiry(extendEnd, longer);
      h.assertAbsent(key, "R5.3: after the extended TTL plus the tolerance");
      return;
    }
    fail(
        "R5.3: in 3 attempts, extend never returned before the %d ms TTL ran out: the machine or"
            + " the store is far too slow to judge this rule",
        ttl.toMillis());
  }

  @Test
  @DisplayName("R5.4 extend with a shorter TTL sets the expiry to now + that TTL")
  default void r5_4_shorterTtlCountsFromNow(Harness h) {
    Duration ttl = h.ttl(SHORT_TTL);
    String owner = token();
    String key = h.heldKey("R5.4", owner);
    assertTrue(h.extend(key, owner, ttl), "R5.4: the owner's extend with a shorter TTL");
    h.sleepPastExpiry(System.nanoTime(), ttl);
    h.assertAbsent(key, "R5.4: after being extended to " + ttl.toMillis() + " ms");
  }

  @Test
  @DisplayName("R5.5 the old token cannot extend the new owner's key after expiry")
  default void r5_5_oldTokenCannotExtendNewOwnersKey(Harness h) {
    h.assertOldOwnerRefused("R5.5", "extend", (n, key, old) -> h.extend(n, key, old, LONG_TTL));
  }

  @Test
  @DisplayName("R5.6 extend of an absent key answers false and does not create it")
  default void r5_6_extendOfAbsentKey(Harness h) {
    String key = h.key("r5.6");
    assertFalse(h.extend(key, token(), LONG_TTL), "R5.6: extend of a key that was never acquired");
    h.assertAbsent(key, "R5.6: after extending a key that was never acquired");
  }

  @Test
  @DisplayName("R5.7 (backdoor) after extend the server's remaining TTL is the new TTL")
  default void r5_7_serverTtlAfterExtend(Harness h) {
    KeyInspector backdoor = h.requireInspector("R5.7");
    Duration ttl = h.ttl(Duration.ofSeconds(5));
    Duration longer = h.ttl(Duration.ofSeconds(20));
    String owner = token();
    String key = h.heldKey("R5.7", owner, ttl);
    long start = System.nanoTime();
    assertTrue(h.extend(key, owner, longer), "R5.7: extend by the owner");
    h.assertServerTtl(backdoor, key, owner, longer, start, "R5.7");
  }

  @Test
  @DisplayName("R5.8 an extend racing a takeover at expiry never leaves two holders")
  default void r5_8_extendIsAtomicAtExpiry(Harness h) throws InterruptedException {
    for (Race.Takeover round :
        Race.atExpiry(h, "R5.8", (n, key, owner) -> h.extend(n, key, owner, LONG_TTL))) {
      assertFalse(
          round.ownerAnswer() && !round.takers().isEmpty(),
          "R5.8: the owner's extend answered true although another client acquired the key at"
              + " its expiry (%s): both now believe they hold it",
          round);
    }
  }
}
