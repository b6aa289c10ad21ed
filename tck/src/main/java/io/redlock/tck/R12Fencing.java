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

  /**
   * R12.1: {@code tryAcquireFenced} of an absent key acquires it for the caller's token, stored
   * exactly as {@code tryAcquire} stores it, and returns a positive fence; on a held key it answers
   * not acquired (fence 0) and the holder keeps the key.
   *
   * <p>If this fails, check that the fenced insert has the same condition and the same stored form
   * as the plain one (the counter lives beside the key, e.g. in a second Redis key or a column,
   * never inside the token), and that the reply carries the counter only when acquired ({@code
   * AcquireResult.acquired(fence)}).
   */
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

  /**
   * R12.2: the counter survives release: after the holder raised it far above any clock ({@code
   * raiseFence}) and released the key, the next fenced acquisition returns more than the raised
   * value, and the one after that more again.
   *
   * <p>If this fails, the counter is deleted with the key: keep it in a separate key or row that
   * release does not touch. (A counter that starts again from the clock, {@code max(counter + 1,
   * time in µs)}, hides this until the counter is ahead of the clock, as it is after a raise.)
   */
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

  /**
   * R12.3: the counter survives expiry: after the holder raised it far above any clock and its key
   * expired, the next fenced acquisition returns more than the raised value.
   *
   * <p>If this fails, the counter expires with the key (a TTL on the counter, or a row replaced as
   * a whole when an expired key is taken over): give the counter no expiry, and keep it when an
   * expired key is taken over.
   */
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

  /**
   * R12.4: plain operations and fenced ones mix: a key taken with {@code tryAcquireFenced} is
   * extended and released by the ordinary calls, and a plain {@code tryAcquire} (and its release)
   * neither needs nor lowers the counter, even one raised far above any clock.
   *
   * <p>If this fails, check that tryAcquire, extend and release did not change: the fenced variant
   * must only add the counter beside the key, and the plain insert must not reset it (an upsert
   * that writes the whole row, counter column included).
   */
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
    long raised = h.acquireFenced(h.node(), key, owner, ttl, rule) + FENCE_JUMP;
    assertTrue(h.raiseFence(h.node(), key, owner, raised), "%s: raiseFence by the holder", rule);
    return raised;
  }

  /** A fenced acquisition of {@code key} for {@code owner} with a long TTL: its fence, or 0. */
  private long fenced(Harness h, String key, String owner, String rule) {
    return h.acquireFenced(h.node(), key, owner, LONG_TTL, rule);
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

  /**
   * R12.5: {@code raiseFence} by the holder raises the counter, so the next acquisition returns
   * more than the raised value; raising to a lower value answers true and lowers nothing.
   *
   * <p>If this fails, check the raise: {@code if the key holds the token then counter =
   * max(counter, atLeast)}, atomically, answering true whenever the key holds the token.
   */
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
        h.raiseFence(h.node(), key, second, 1),
        "R12.5: raiseFence by the holder to a value below the counter still answers true");
    assertTrue(h.release(key, second), "R12.5: release by the second holder");
    higherFence(h, key, token(), f2, "R12.5", "fence after a raise to 1 (it must not lower it)");
  }

  /**
   * R12.6: {@code raiseFence} with another token, on a released key or on an expired key answers
   * false and changes nothing.
   *
   * <p>If this fails, check that the raise compares the token and treats an expired key as absent,
   * in the same atomic step as the raise (Redis: one script; SQL: the condition in the UPDATE's
   * WHERE clause).
   */
  @Test
  @DisplayName("R12.6 raiseFence with a wrong token, or on a released or expired key, is refused")
  default void r12_6_raiseRefused(Harness h) {
    h.requireFencing("R12.6");
    String key = h.key("r12.6");
    String owner = token();
    long raised = fenced(h, key, owner, "R12.6") + FENCE_JUMP;
    assertFalse(
        h.raiseFence(h.node(), key, token(), raised),
        "R12.6: raiseFence with another token than the holder's");
    assertTrue(h.release(key, owner), "R12.6: release by the holder");
    assertFalse(
        h.raiseFence(h.node(), key, owner, raised),
        "R12.6: raiseFence by the former holder after it released the key");
    Duration ttl = h.ttl(SHORT_TTL);
    String shortLived = token();
    long f2 = h.acquireFenced(h.node(), key, shortLived, ttl, "R12.6");
    h.sleepPastExpiry(System.nanoTime(), ttl);
    assertFalse(
        h.raiseFence(h.node(), key, shortLived, raised),
        "R12.6: raiseFence by a holder whose key has expired");
    assertThat(higherFence(h, key, token(), f2, "R12.6", "fence after three refused raises"))
        .as("R12.6: fence after three refused raises to %d", raised)
        .isLessThan(raised);
  }

  /**
   * R12.7: {@code raiseFence} leaves the lock as it was: the holder keeps it, and it still expires
   * at its own time.
   *
   * <p>If this fails, the raise rewrites the key (a {@code SET} without {@code PX} drops the
   * expiry; an UPDATE that also sets the expiry moves it).
   */
  @Test
  @DisplayName("R12.7 raiseFence changes neither the key's holder nor its expiry")
  default void r12_7_raiseLeavesLockAlone(Harness h) {
    h.requireFencing("R12.7");
    String key = h.key("r12.7");
    String owner = token();
    Duration ttl = h.ttl(SHORT_TTL);
    long fence = h.acquireFenced(h.node(), key, owner, ttl, "R12.7");
    long answered = System.nanoTime();
    assertTrue(h.raiseFence(h.node(), key, owner, fence + 1), "R12.7: raiseFence");
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

  /**
   * R12.8: under contention, holders in turn get increasing fences: {@value Harness#THREADS}
   * threads on {@value Harness#CLIENTS} node instances compete for one key, and each winner records
   * its fence and the order in which it held the key, then releases it; in that order the fences
   * strictly increase.
   *
   * <p>If this fails while R12.2 passes, the counter is not changed in the same atomic step as the
   * insert (a separate statement or transaction, or a client-side read-modify-write).
   */
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

  /**
   * R12.9: the counter is changed atomically with the insert even when holders overlap because keys
   * expire under them: with the counter first raised far above any clock, {@value Harness#THREADS}
   * threads on {@value Harness#CLIENTS} node instances acquire one key with a TTL of a few
   * milliseconds, without releasing, for up to a second; no two acquisitions get the same fence,
   * every fence is above the raised value, and an acquisition that ended before another began got
   * the lower fence.
   *
   * <p>If this fails, two acquisitions read the same counter: the increment is a separate
   * read-then-write or a second command after the insert (move it into the insert's script or
   * statement), or runs at an isolation level that lets two transactions read the same value. A
   * counter computed as {@code max(counter + 1, time in µs)} hides this while the clock is ahead.
   */
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

  /**
   * R12.10: {@code tryAcquireFenced} and {@code raiseFence} check their arguments like the other
   * calls (an {@link IllegalArgumentException} from the method, for an empty key or token, an
   * unusable TTL or a value that is not positive), and throw {@link IllegalStateException} naming
   * the node after close.
   *
   * <p>If this fails, call {@link io.redlock.spi.support.LockNodeArguments} and the closed check
   * first thing in both methods, as in the others.
   */
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

  /**
   * R12.11 (needs {@link LockNodeCompatibilityKit#restartStore()}): the counter never goes
   * backwards, even across a crash and restart of the store: the first fenced acquisition after the
   * restart returns more than the last one before.
   *
   * <p>If this fails on a store that loses data in a crash, start a lost counter from a floor that
   * cannot be below anything handed out before, e.g. {@code max(counter + 1, server time in
   * microseconds)} (the Redis backend's script); on a durable store, check that the counter is
   * written durably with the key.
   */
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
    long f2 = h.acquireFenced(after, key, token(), LONG_TTL, "R12.11");
    assertThat(f2)
        .as("R12.11: first fence after the restart (the last one before was %d)", f1)
        .isGreaterThan(f1);
  }
}
