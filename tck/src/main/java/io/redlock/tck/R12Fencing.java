package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * R12 Fencing counters: per-key counters that only go up (if declared). The engine builds
 * quorum-wide fencing tokens on these: the maximum of the granting nodes' counters, written back to
 * them with {@code raiseFence}.
 */
interface R12Fencing {

  @Test
  @DisplayName("R12.1 a fenced acquire sets the key like tryAcquire and returns a positive fence")
  default void r12_1_fencedAcquire(Harness h) {
    h.requireFencing("R12.1");
    String key = h.key("r12.1");
    String owner = token();
    higherFence(h, key, owner, 0, "R12.1", "fence of a fenced acquire of an absent key");
    h.assertHeldBy(key, owner, "R12.1");
    assertThat(fenced(h, key, token(), "R12.1"))
        .as("R12.1: a fenced acquire of a held key must answer not acquired (fence 0)")
        .isZero();
    h.assertHeldBy(key, owner, "R12.1 (after another token's fenced acquire)");
    assertTrue(h.release(key, owner), "R12.1: the holder's release of a key taken fenced");
  }

  @Test
  @DisplayName("R12.2 the counter survives release: each new acquisition gets a higher fence")
  default void r12_2_survivesRelease(Harness h) {
    h.requireFencing("R12.2");
    String key = h.key("r12.2");
    String owner = token();
    long raised = acquireAndRaise(h, key, owner, LONG_TTL, "R12.2");
    assertTrue(h.release(key, owner), "R12.2: release by the holder");
    String second = token();
    long f2 = higherFence(h, key, second, raised, "R12.2", "fence after a raise and a release");
    assertTrue(h.release(key, second), "R12.2: release by the second holder");
    higherFence(h, key, token(), f2, "R12.2", "fence after another release");
  }

  @Test
  @DisplayName("R12.3 the counter survives expiry: the next holder gets a higher fence")
  default void r12_3_survivesExpiry(Harness h) {
    h.requireFencing("R12.3");
    String key = h.key("r12.3");
    Duration ttl = h.ttl(SHORT_TTL);
    long raised = acquireAndRaise(h, key, token(), ttl, "R12.3");
    h.sleepPastExpiry(System.nanoTime(), ttl);
    higherFence(h, key, token(), raised, "R12.3", "fence after a raise and the key's expiry");
  }

  @Test
  @DisplayName("R12.4 plain and fenced operations mix; plain ones leave the counter alone")
  default void r12_4_plainAndFencedMix(Harness h) {
    h.requireFencing("R12.4");
    String key = h.key("r12.4");
    String first = token();
    long raised = acquireAndRaise(h, key, first, LONG_TTL, "R12.4");
    assertTrue(h.extend(key, first, LONG_TTL), "R12.4: extend by the holder of a fenced key");
    assertTrue(h.release(key, first), "R12.4: release by the holder of a fenced key");
    String plain = token();
    assertTrue(h.acquire(key, plain, LONG_TTL), "R12.4: a plain tryAcquire of a fenced key");
    h.assertHeldBy(key, plain, "R12.4");
    assertTrue(h.release(key, plain), "R12.4: release by the plain holder");
    higherFence(h, key, token(), raised, "R12.4", "fence after a plain acquire and release");
  }

  /**
   * A fenced acquisition of {@code key} for {@code owner}, whose counter is then raised {@value
   * #FENCE_JUMP} above the fence: far above any clock-based floor. Returns the raised value.
   */
  private long acquireAndRaise(Harness h, String key, String owner, Duration ttl, String rule) {
    long raised = acquireFenced(h, h.node(), key, owner, ttl, rule) + FENCE_JUMP;
    assertTrue(raiseFence(h, h.node(), key, owner, raised), "%s: raiseFence by the holder", rule);
    return raised;
  }

  /** A fenced acquisition of {@code key} for {@code owner} with a long TTL: its fence, or 0. */
  private long fenced(Harness h, String key, String owner, String rule) {
    return acquireFenced(h, h.node(), key, owner, LONG_TTL, rule);
  }

  /** {@link #fenced}, which must acquire the key with a fence above {@code above}. */
  private long higherFence(
      Harness h, String key, String owner, long above, String rule, String what) {
    long fence = fenced(h, key, owner, rule);
    assertThat(fence)
        .as("%s: %s (the fence before was %d)", rule, what, above)
        .isGreaterThan(above);
    return fence;
  }

  @Test
  @DisplayName("R12.5 raiseFence by the holder raises the counter and never lowers it")
  default void r12_5_raiseByHolder(Harness h) {
    h.requireFencing("R12.5");
    String key = h.key("r12.5");
    String first = token();
    long raised = acquireAndRaise(h, key, first, LONG_TTL, "R12.5");
    h.assertHeldBy(key, first, "R12.5 (after raiseFence)");
    assertTrue(h.release(key, first), "R12.5: release by the holder");
    String second = token();
    long f2 = higherFence(h, key, second, raised, "R12.5", "fence after the holder's raise");
    assertTrue(
        raiseFence(h, h.node(), key, second, 1),
        "R12.5: raiseFence by the holder to a value below the counter still answers true");
    assertTrue(h.release(key, second), "R12.5: release by the second holder");
    higherFence(h, key, token(), f2, "R12.5", "fence after a raise to 1 (it must not lower it)");
  }

  @Test
  @DisplayName("R12.6 raiseFence with a wrong token, or on a released or expired key, is refused")
  default void r12_6_raiseRefused(Harness h) {
    h.requireFencing("R12.6");
    String key = h.key("r12.6");
    String owner = token();
    long raised = fenced(h, key, owner, "R12.6") + FENCE_JUMP;
    assertFalse(
        raiseFence(h, h.node(), key, token(), raised),
        "R12.6: raiseFence with another token than the holder's");
    assertTrue(h.release(key, owner), "R12.6: release by the holder");
    assertFalse(
        raiseFence(h, h.node(), key, owner, raised),
        "R12.6: raiseFence by the former holder after it released the key");
    Duration ttl = h.ttl(SHORT_TTL);
    String shortLived = token();
    long f2 = acquireFenced(h, h.node(), key, shortLived, ttl, "R12.6");
    h.sleepPastExpiry(System.nanoTime(), ttl);
    assertFalse(
        raiseFence(h, h.node(), key, shortLived, raised),
        "R12.6: raiseFence by a holder whose key has expired");
    assertThat(higherFence(h, key, token(), f2, "R12.6", "fence after three refused raises"))
        .as("R12.6: fence after three refused raises to %d", raised)
        .isLessThan(raised);
  }

  @Test
  @DisplayName("R12.7 raiseFence changes neither the key's holder nor its expiry")
  default void r12_7_raiseLeavesLockAlone(Harness h) {
    h.requireFencing("R12.7");
    String key = h.key("r12.7");
    String owner = token();
    Duration ttl = h.ttl(SHORT_TTL);
    long fence = acquireFenced(h, h.node(), key, owner, ttl, "R12.7");
    long answered = System.nanoTime();
    assertTrue(raiseFence(h, h.node(), key, owner, fence + 1), "R12.7: raiseFence");
    h.inspector()
        .ifPresent(
            backdoor -> {
              java.util.Optional<KeyInspector.KeyState> state = backdoor.inspect(key);
              if (System.nanoTime() - h.heldUntil(answered, ttl) < 0) { // else too late to judge
                assertThat(state)
                    .as("R12.7: the key read through the backdoor after raiseFence (it is held)")
                    .isPresent();
                assertThat(state.get().owner())
                    .as("R12.7: owner read through the backdoor after raiseFence")
                    .isEqualTo(owner);
              }
            });
    h.sleepPastExpiry(answered, ttl);
    h.assertAbsent(key, "R12.7: after its TTL (raiseFence must not move the expiry)");
  }

  @Test
  @DisplayName("R12.8 holders taking turns under contention get strictly increasing fences")
  default void r12_8_increasingUnderContention(Harness h) throws InterruptedException {
    h.requireFencing("R12.8");
    String key = h.key("r12.8");
    List<LockNode> clients = h.clients();
    AtomicInteger turn = new AtomicInteger();
    Map<Integer, Long> fenceOfTurn = new java.util.concurrent.ConcurrentHashMap<>();
    try (Race race = new Race(THREADS, "r12.8")) {
      race.run(
          i ->
              () -> {
                LockNode n = clients.get(i % CLIENTS);
                for (int attempt = 0; attempt < ROUNDS; attempt++) {
                  String mine = token();
                  AcquireResult result =
                      h.await(n.tryAcquireFenced(key, mine, LONG_TTL), "tryAcquireFenced");
                  if (result.acquired()) {
                    // Holding the key orders the turns: no other thread is between here and
                    // the release below.
                    fenceOfTurn.put(turn.incrementAndGet(), result.fence());
                    h.await(n.release(key, mine), "release");
                  }
                }
                return null;
              },
          RACE_TIMEOUT);
    }
    List<Long> fences = new ArrayList<>(new java.util.TreeMap<>(fenceOfTurn).values());
    assertThat(fences).as("R12.8: turns taken (some thread must have won)").isNotEmpty();
    for (int i = 1; i < fences.size(); i++) {
      assertThat(fences.get(i))
          .as(
              "R12.8: fence of turn %d (turn %d had %d); all: %s",
              i + 1, i, fences.get(i - 1), fences)
          .isGreaterThan(fences.get(i - 1));
    }
  }

  @Test
  @DisplayName("R12.9 overlapping acquisitions of an expiring key get distinct, ordered fences")
  default void r12_9_distinctUnderExpiry(Harness h) throws InterruptedException {
    h.requireFencing("R12.9");
    String key = h.key("r12.9");
    String first = token();
    long raised = acquireAndRaise(h, key, first, LONG_TTL, "R12.9");
    assertTrue(h.release(key, first), "R12.9: release by the holder");
    Duration tiny = h.ttl(Duration.ofMillis(2));
    List<LockNode> clients = h.clients();
    Queue<long[]> acquired = new ConcurrentLinkedQueue<>(); // {start, end, fence}
    long until = System.nanoTime() + Duration.ofSeconds(1).toNanos();
    try (Race race = new Race(THREADS, "r12.9")) {
      race.run(
          i ->
              () -> {
                LockNode n = clients.get(i % CLIENTS);
                // Bounded in count and time; stops early once enough acquisitions overlapped.
                for (int attempt = 0;
                    attempt < 400 && acquired.size() < 100 && System.nanoTime() - until < 0;
                    attempt++) {
                  long start = System.nanoTime();
                  AcquireResult result =
                      h.await(n.tryAcquireFenced(key, token(), tiny), "tryAcquireFenced");
                  if (result.acquired()) {
                    acquired.add(new long[] {start, System.nanoTime(), result.fence()});
                  } else {
                    Thread.sleep(1); // let the key expire under the racers, not spin
                  }
                }
                return null;
              },
          RACE_TIMEOUT);
    }
    assertThat(acquired).as("R12.9: acquisitions (some must have succeeded)").isNotEmpty();
    Map<Long, Long> counts =
        acquired.stream()
            .collect(Collectors.groupingBy(a -> a[2], TreeMap::new, Collectors.counting()));
    counts.values().removeIf(c -> c == 1);
    assertThat(counts)
        .as("R12.9: fences handed out more than once (value -> times), of %d", acquired.size())
        .isEmpty();
    for (long[] a : acquired) {
      assertThat(a[2])
          .as("R12.9: a fence after the counter was raised to %d", raised)
          .isGreaterThan(raised);
      for (long[] b : acquired) {
        if (a[1] - b[0] < 0) {
          assertThat(a[2])
              .as("R12.9: fence of an acquisition that ended before one that got %d began", b[2])
              .isLessThan(b[2]);
        }
      }
    }
  }

  @Test
  @DisplayName("R12.10 fenced calls reject bad arguments, and throw after close")
  default void r12_10_validation(Harness h) {
    h.requireFencing("R12.10");
    LockNode n = h.node();
    String key = h.key("r12.10");
    h.assertRejected(
        "tryAcquireFenced with an empty key", () -> n.tryAcquireFenced("", token(), LONG_TTL));
    h.assertRejected(
        "tryAcquireFenced with a null key", () -> n.tryAcquireFenced(null, token(), LONG_TTL));
    h.assertRejected(
        "tryAcquireFenced with an empty token", () -> n.tryAcquireFenced(key, "", LONG_TTL));
    h.assertRejected(
        "tryAcquireFenced with a zero TTL", () -> n.tryAcquireFenced(key, token(), Duration.ZERO));
    h.assertRejected(
        "tryAcquireFenced with a negative TTL",
        () -> n.tryAcquireFenced(key, token(), Duration.ofMillis(-5)));
    h.assertRejected("raiseFence with an empty key", () -> n.raiseFence("", token(), 5));
    h.assertRejected("raiseFence with a null token", () -> n.raiseFence(key, null, 5));
    h.assertRejected("raiseFence with 0", () -> n.raiseFence(key, token(), 0));
    h.assertRejected("raiseFence with a negative value", () -> n.raiseFence(key, token(), -7));
    h.assertRefusedAfterClose(
        "R12.10",
        Map.of(
            "tryAcquireFenced", c -> c.tryAcquireFenced(key, token(), LONG_TTL),
            "raiseFence", c -> c.raiseFence(key, token(), 5)));
  }

  @Test
  @DisplayName("R12.11 the counter never goes backwards across a restart of the store")
  default void r12_11_monotonicAcrossRestart(Harness h) {
    h.requireFencing("R12.11");
    String key = h.key("r12.11");
    String before = token();
    long f1 = fenced(h, key, before, "R12.11");
    h.requireRestart("R12.11");
    LockNode after = h.newNode();
    // A durable store still holds the key: free it (a store that lost it answers false).
    h.await(after.release(key, before), "release after the restart");
    long f2 = acquireFenced(h, after, key, token(), LONG_TTL, "R12.11");
    assertThat(f2)
        .as("R12.11: first fence after the restart (the last one before was %d)", f1)
        .isGreaterThan(f1);
  }

  /**
   * {@code tryAcquireFenced} and await the answer; a key acquired here is released after the test.
   *
   * @return the fence if acquired (checked to be positive), 0 if not
   */
  private long acquireFenced(
      Harness h, LockNode n, String key, String token, Duration ttl, String rule) {
    AcquireResult result = h.await(n.tryAcquireFenced(key, token, ttl), "tryAcquireFenced");
    if (result.acquired()) {
      h.held.add(new Held(key, token));
      assertThat(result.fence())
          .as(
              "%s: tryAcquireFenced answered acquired without a fence; answer"
                  + " AcquireResult.acquired(counter)",
              rule)
          .isPositive();
    }
    return result.fence();
  }

  /** {@code raiseFence} and await the answer. */
  private boolean raiseFence(Harness h, LockNode n, String key, String token, long atLeast) {
    return h.await(n.raiseFence(key, token, atLeast), "raiseFence");
  }
}
