package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R3 Expiry: a key lives for its TTL on the store's clock, then counts as absent. */
interface R3Expiry {

  @Test
  @DisplayName("R3.1 a key is held until its TTL minus one precision step, never less")
  default void r3_1_heldUntilTtl(Harness h) {
    Duration ttl = h.ttl(Duration.ofSeconds(1).plus(h.precision().multipliedBy(2)));
    for (int attempt = 0; attempt < 5; attempt++) {
      String key = h.key("r3.1-" + attempt);
      long start = System.nanoTime();
      assertThat(h.acquire(key, token(), ttl)).isTrue();
      long end = h.heldUntil(start, ttl);
      long probeStart = System.nanoTime();
      Optional<Boolean> first = h.heldBefore(key, end);
      long roundTrip = System.nanoTime() - probeStart;
      first.ifPresent(
          held ->
              assertThat(held)
                  .as(
                      "R3.1: a key with a TTL of %d ms was free right after acquiring",
                      ttl.toMillis())
                  .isTrue());
      // The last probe starts a few round trips before the end, so that it ends before it.
      sleepUntil(end - Math.max(Duration.ofMillis(5).toNanos(), 3 * roundTrip));
      Optional<Boolean> last = h.heldBefore(key, end);
      if (first.isEmpty() || last.isEmpty()) {
        continue; // too slow to judge this time; try again with a fresh key
      }
      assertThat(last.get())
          .as(
              "R3.1: a key with a TTL of %d ms was free %d ms after the acquire started: it must be"
                  + " held for its TTL minus one precision step (%d ms); the key ended early",
              ttl.toMillis(), (System.nanoTime() - start) / 1_000_000, h.precision().toMillis())
          .isTrue();
      return;
    }
    fail(
        "R3.1: in 5 attempts no probe ended within the TTL of %d ms: the machine or the store is"
            + " far too slow to judge this rule",
        ttl.toMillis());
  }

  @Test
  @DisplayName("R3.2 a key is absent after its TTL plus one precision step and the tolerance")
  default void r3_2_absentAfterTtl(Harness h) {
    Duration ttl = h.ttl(SHORT_TTL);
    String key = h.key("r3.2");
    assertThat(h.acquire(key, token(), ttl)).isTrue();
    h.sleepPastExpiry(System.nanoTime(), ttl);
    h.assertAbsent(key, "R3.2: after its TTL of " + ttl.toMillis() + " ms plus the tolerance");
  }

  @Test
  @DisplayName("R3.3 a sub-second TTL is neither truncated nor rounded up to a second")
  default void r3_3_subSecondTtl(Harness h) {
    Assumptions.assumeTrue(
        h.precision().compareTo(Duration.ofMillis(100)) <= 0,
        "R3.3 skipped: the node declares a TTL precision of "
            + h.precision().toMillis()
            + " ms, so it does not take sub-second TTLs");
    Duration ttl = h.ttl(Duration.ofMillis(200));
    for (int attempt = 0; attempt < 5; attempt++) {
      String key = h.key("r3.3-" + attempt);
      long start = System.nanoTime();
      assertThat(h.acquire(key, token(), ttl)).isTrue();
      long acquired = System.nanoTime();
      Optional<Boolean> held = h.heldBefore(key, h.heldUntil(start, ttl));
      if (held.isEmpty()) {
        continue; // too slow to judge "held" this time; try again with a fresh key
      }
      assertThat(held.get())
          .as("R3.3: a key with a TTL of %d ms was free right after acquiring", ttl.toMillis())
          .isTrue();
      h.sleepPastExpiry(acquired, ttl);
      h.assertAbsent(key, "R3.3: after its TTL of " + ttl.toMillis() + " ms plus the tolerance");
      return;
    }
    fail("R3.3: could not check within %d ms of acquiring in 5 attempts", ttl.toMillis());
  }

  @Test
  @DisplayName("R3.4 an expired key not yet removed is absent for tryAcquire, extend and release")
  default void r3_4_expiredButNotCollected(Harness h) {
    Duration ttl = h.ttl(SHORT_TTL);
    String forAcquire = h.key("r3.4-acquire");
    String forExtend = h.key("r3.4-extend");
    String forRelease = h.key("r3.4-release");
    String owner = token();
    for (String key : List.of(forAcquire, forExtend, forRelease)) {
      assertTrue(h.acquire(key, owner, ttl), "R3.4: tryAcquire of an absent key");
    }
    h.sleepPastExpiry(System.nanoTime(), ttl);

    SoftAssertions soft = new SoftAssertions();
    soft.assertThat(h.acquire(forAcquire, token(), LONG_TTL))
        .as("R3.4: tryAcquire by another token of a key whose TTL has passed")
        .isTrue();
    soft.assertThat(h.extend(forExtend, owner, LONG_TTL))
        .as("R3.4: extend by the old owner of a key whose TTL has passed")
        .isFalse();
    soft.assertThat(h.release(forRelease, owner))
        .as("R3.4: release by the old owner of a key whose TTL has passed")
        .isFalse();
    soft.assertAll();
    h.assertAbsent(forExtend, "R3.4: after the old owner's extend of an expired key");
    h.assertAbsent(forRelease, "R3.4: after the old owner's release of an expired key");
  }

  @Test
  @DisplayName("R3.5 (backdoor) the server's remaining TTL is the TTL and counts down")
  default void r3_5_ttlCountedOnServer(Harness h) {
    KeyInspector backdoor = h.requireInspector("R3.5");
    Duration ttl = h.ttl(Duration.ofSeconds(10));
    String key = h.key("r3.5");
    String owner = token();
    long start = System.nanoTime();
    assertTrue(h.acquire(key, owner, ttl), "R3.5: tryAcquire of an absent key");
    long acquired = System.nanoTime();
    h.assertServerTtl(backdoor, key, owner, ttl, start, "R3.5");

    // Longer than the steps a coarse clock counts in: a remaining TTL read on either side of a
    // tick may be off by a step.
    Duration wait = max(Duration.ofMillis(300), h.precision().multipliedBy(3));
    sleepUntil(acquired + wait.toNanos());
    Duration waited = Duration.ofNanos(System.nanoTime() - acquired);
    KeyInspector.KeyState second = h.inspectPresent(backdoor, key, "R3.5");
    assertThat(second.remainingTtl())
        .as(
            "R3.5: the server's remaining TTL %d ms after acquiring (it must count down on the"
                + " server)",
            waited.toMillis())
        .isLessThanOrEqualTo(ttl.minus(waited).plus(h.precision().multipliedBy(2)).plusMillis(20));
  }
}
