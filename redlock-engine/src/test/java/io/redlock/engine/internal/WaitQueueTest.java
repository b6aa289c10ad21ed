package io.redlock.engine.internal;

import static io.redlock.engine.internal.Cluster.times;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Several acquire calls of one JVM waiting for one resource, on real threads. Their polling pauses
 * never end on their own here (see {@link Parking}), so every attempt after the first is caused by
 * a wake: the tests count attempts per waiter (on node 0) to see whom a release woke.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@DisplayName("Waiters of one resource in one JVM")
class WaitQueueTest {
  private static final String KEY = "invoice-42";
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration LONG_WAIT = Duration.ofSeconds(60);

  /** Real time for a wrongly woken waiter to show itself; it is runnable at once. */
  private static final long QUIET_MILLIS = 200;

  private Cluster cluster;
  private Parking sleeper;
  private QuorumRedlock redlock;
  private final List<Waiter> waiters = new ArrayList<>();
  private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();

  /** Thread names in the order of their attempts (one entry per attempt, seen on node 0). */
  private final List<String> attemptOrder = Collections.synchronizedList(new ArrayList<>());

  private final List<String> granted = Collections.synchronizedList(new ArrayList<>());

  /** Runs on a waiter's thread at the start of its attempt; may be replaced by a test. */
  private volatile Runnable duringAttempt = () -> {};

  @BeforeEach
  void notifyingCluster() {
    cluster = new Cluster(5);
    cluster.nodes.forEach(FaultyNode::notifyingReleases);
    cluster.node(0).beforeAcquire =
        () -> {
          String name = Thread.currentThread().getName();
          attempts.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
          attemptOrder.add(name);
          duringAttempt.run();
        };
    sleeper = new Parking(cluster.ticker);
    redlock =
        new QuorumRedlock(
            List.<LockNode>copyOf(cluster.nodes),
            Cluster.SETTINGS,
            cluster.ticker,
            sleeper,
            cluster.random,
            false,
            io.redlock.RedlockListener.NONE);
  }

  @AfterEach
  void stopWaiters() throws InterruptedException {
    for (Waiter w : waiters) {
      w.thread.interrupt();
    }
    for (Waiter w : waiters) {
      w.thread.join(10_000);
      assertThat(w.thread.isAlive()).as("%s still running", w.name).isFalse();
    }
    Thread.interrupted();
  }

  // ---------------------------------------------------------------------------------------------

  @Test
  @DisplayName("one release, reported by all five nodes, wakes only the first of four waiters")
  void one_release_wakes_exactly_one_waiter() throws Exception {
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    Waiter first = start("w1");
    start("w2");
    start("w3");
    start("w4");

    releaseElsewhere(KEY);

    Lease lease = first.lease();
    Thread.sleep(QUIET_MILLIS);
    assertThat(lease.isValid()).isTrue();
    assertThat(attemptsOf("w2", "w3", "w4"))
        .as("attempts of the others: only the one that failed before they queued")
        .containsExactly(1, 1, 1);
    assertThat(sleeper.parked).hasSize(3);
    assertThat(cluster.calls(n -> n.subscribeCalls.get()))
        .as("one registration per node for the resource, not one per waiter")
        .isEqualTo(times(5, 1));
  }

  @Test
  @DisplayName("waiters are granted the lock in the order they started waiting")
  void grants_follow_arrival_order() throws Exception {
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    List<String> order = List.of("w1", "w2", "w3", "w4");
    for (String name : order) {
      startReleasingOnGrant(name);
    }
    attemptOrder.clear(); // the four first attempts, before they queued

    releaseElsewhere(KEY);
    for (Waiter w : waiters) {
      w.outcome.get(20, TimeUnit.SECONDS);
    }

    assertThat(granted).containsExactlyElementsOf(order);
    List<Integer> attemptRanks = attemptOrder.stream().map(order::indexOf).toList();
    assertThat(attemptRanks)
        .as("who tried, in turn: nobody tried before the waiters ahead of it got the lock")
        .isSorted()
        .contains(0, 1, 2, 3);
    assertThat(cluster.calls(n -> n.openSubscriptions.get())).isEqualTo(times(5, 0));
    assertThat(redlock.waitingResources()).isZero();
  }

  @Test
  @DisplayName(
      "releases reported while the first waiter is trying make it try once more, nobody else")
  void releases_during_the_heads_attempt_are_kept_for_the_head() throws Exception {
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    Waiter first = start("w1");
    start("w2");
    AtomicBoolean armed = new AtomicBoolean(true);
    duringAttempt =
        () -> {
          if (Thread.currentThread() == first.thread && armed.getAndSet(false)) {
            cluster.nodes.forEach(FaultyNode::notifyListeners); // all five nodes report at once
          }
        };

    redlock.releasedLocally(KEY); // a lease released here: the lock itself stays held elsewhere

    awaitTrue(
        () -> attemptsOf("w1").get(0) == 3 && sleeper.parked.contains(first.thread),
        "w1 tried twice more and waits again");
    Thread.sleep(QUIET_MILLIS);
    assertThat(attemptsOf("w1", "w2"))
        .as("w1: the attempt it was woken for, one for the releases noted meanwhile")
        .containsExactly(3, 1);
  }

  @Test
  @DisplayName("a first waiter interrupted as it is woken passes the wake to the next waiter")
  void an_interrupted_head_passes_its_wake_on() throws Exception {
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    Waiter first = start("w1");
    sleeper.interruptOnWake.add(first.thread);
    Waiter second = start("w2");
    start("w3");

    releaseElsewhere(KEY);

    assertThatThrownBy(() -> first.outcome.get(20, TimeUnit.SECONDS))
        .hasCauseInstanceOf(InterruptedException.class);
    assertThat(second.lease().isValid()).isTrue();
    Thread.sleep(QUIET_MILLIS);
    assertThat(attemptsOf("w1", "w3")).as("neither tried again").containsExactly(1, 1);
  }

  @Test
  @DisplayName("a first waiter interrupted while nothing was released wakes nobody")
  void an_interrupted_head_without_a_wake_passes_nothing() throws Exception {
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    Waiter first = start("w1");
    Waiter second = start("w2");

    first.thread.interrupt();

    assertThatThrownBy(() -> first.outcome.get(20, TimeUnit.SECONDS))
        .hasCauseInstanceOf(InterruptedException.class);
    Thread.sleep(QUIET_MILLIS);
    assertThat(attemptsOf("w2")).containsExactly(1);

    releaseElsewhere(KEY);
    assertThat(second.lease().isValid()).as("w2 is first in line now").isTrue();
  }

  @Test
  @DisplayName("a first waiter that times out with a release pending passes it to the next waiter")
  void a_head_that_times_out_passes_its_wake_on() throws Exception {
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    Waiter first = start("w1", KEY, Duration.ofSeconds(1), false);
    Waiter second = start("w2");
    start("w3");
    AtomicBoolean armed = new AtomicBoolean(true);
    duringAttempt =
        () -> {
          if (Thread.currentThread() == first.thread && armed.getAndSet(false)) {
            cluster.ticker.advance(Duration.ofSeconds(2)); // w1's last attempt ends past its wait
            redlock.releasedLocally(KEY); // ...and a release is reported during it
          }
        };

    redlock.releasedLocally(KEY);

    assertThatThrownBy(() -> first.outcome.get(20, TimeUnit.SECONDS))
        .hasCauseInstanceOf(LockTimeoutException.class);
    awaitTrue(
        () -> attemptsOf("w2").get(0) == 2 && sleeper.parked.contains(second.thread),
        "w2 tried with the wake w1 passed on, and waits again");
    Thread.sleep(QUIET_MILLIS);
    assertThat(attemptsOf("w1", "w2", "w3")).containsExactly(2, 2, 1);
  }

  @Test
  @DisplayName(
      "after a waiter won the lock, late reports of the release it won wake nobody; its own"
          + " release wakes the next")
  void late_reports_of_a_won_release_are_ignored() throws Exception {
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    Waiter first = start("w1");
    Waiter second = start("w2");
    releaseElsewhere(KEY);
    Lease lease = first.lease();

    cluster.nodes.forEach(FaultyNode::notifyListeners);
    Thread.sleep(QUIET_MILLIS);
    assertThat(attemptsOf("w2")).containsExactly(1);

    lease.release();
    assertThat(second.lease().isValid()).isTrue();
  }

  @Test
  @DisplayName("once the lock a waiter won may have expired, node reports wake the next again")
  void node_reports_count_again_once_a_won_lock_may_have_expired() throws Exception {
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    Waiter first = start("w1");
    Waiter second = start("w2");
    releaseElsewhere(KEY);
    first.lease(); // never released: it expires

    cluster.ticker.advance(TTL.plusSeconds(1));
    cluster.node(3).notifyListeners();

    assertThat(second.lease().isValid()).isTrue();
  }

  @Test
  @DisplayName(
      "each notifying node is subscribed to once per resource, and all are closed when the last"
          + " waiter leaves")
  void one_subscription_per_node_and_resource() throws Exception {
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    cluster.holdElsewhere("other", 0, 1, 2, 3, 4);
    start("w1");
    start("w2");
    start("w3");
    start("o1", "other", LONG_WAIT, false);

    assertThat(cluster.calls(n -> n.subscribeCalls.get())).isEqualTo(times(5, 2));
    assertThat(cluster.calls(n -> n.openSubscriptions.get())).isEqualTo(times(5, 2));
    assertThat(redlock.waitingResources()).isEqualTo(2);

    waiters.get(0).thread.interrupt();
    waiters.get(1).thread.interrupt();
    awaitTrue(() -> sleeper.parked.size() == 2, "two waiters left");
    assertThat(cluster.calls(n -> n.openSubscriptions.get()))
        .as("open while one waiter is left on each resource")
        .isEqualTo(times(5, 2));

    waiters.get(2).thread.interrupt();
    waiters.get(3).thread.interrupt();
    for (Waiter w : waiters) {
      w.thread.join(10_000);
    }
    assertThat(cluster.calls(n -> n.openSubscriptions.get())).isEqualTo(times(5, 0));
    assertThat(cluster.calls(n -> n.subscribeCalls.get())).isEqualTo(times(5, 2));
    assertThat(redlock.waitingResources()).isZero();
    assertThat(cluster.nodes).allSatisfy(n -> assertThat(n.violations).isEmpty());
  }

  @Test
  @DisplayName(
      "waiters that come and go while releases are reported leave no subscription open behind")
  void joining_and_leaving_concurrently_leaks_no_subscription() throws Exception {
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    QuorumRedlock polling = cluster.redlock(); // pauses move the fake ticker and end at once
    int threads = 4;
    ExecutorService pool = Executors.newFixedThreadPool(threads); // the common pool may be 1 thread
    List<CompletableFuture<Integer>> runs = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      runs.add(
          CompletableFuture.supplyAsync(
              () -> {
                int timeouts = 0;
                for (int i = 0; i < 30; i++) {
                  try {
                    polling.acquire(KEY, TTL, Duration.ofMillis(300)).release();
                  } catch (LockTimeoutException expected) {
                    timeouts++;
                  } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                  }
                }
                return timeouts;
              },
              pool));
    }
    pool.shutdown();
    for (int i = 0; i < 300 && !runs.stream().allMatch(CompletableFuture::isDone); i++) {
      polling.releasedLocally(KEY);
      cluster.nodes.forEach(FaultyNode::notifyListeners);
      Thread.sleep(1);
    }

    for (CompletableFuture<Integer> run : runs) {
      assertThat(run.get(30, TimeUnit.SECONDS)).as("every call timed out").isEqualTo(30);
    }
    assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    assertThat(cluster.calls(n -> n.subscribeCalls.get()))
        .allSatisfy(c -> assertThat(c).isPositive());
    assertThat(cluster.calls(n -> n.openSubscriptions.get())).isEqualTo(times(5, 0));
    assertThat(polling.waitingResources()).isZero();
    assertThat(cluster.nodes).allSatisfy(n -> assertThat(n.violations).isEmpty());
  }

  // ---------------------------------------------------------------------------------------------

  /** One acquire call on its own thread. */
  private record Waiter(String name, Thread thread, CompletableFuture<Lease> outcome) {
    Lease lease() throws Exception {
      return outcome.get(20, TimeUnit.SECONDS);
    }
  }

  private Waiter start(String name) throws InterruptedException {
    return start(name, KEY, LONG_WAIT, false);
  }

  private Waiter startReleasingOnGrant(String name) throws InterruptedException {
    return start(name, KEY, LONG_WAIT, true);
  }

  /** Starts an acquire call and returns once it waits (queued, after its first attempt failed). */
  private Waiter start(String name, String key, Duration maxWait, boolean releaseOnGrant)
      throws InterruptedException {
    CompletableFuture<Lease> outcome = new CompletableFuture<>();
    Thread thread =
        new Thread(
            () -> {
              try {
                Lease lease = redlock.acquire(key, TTL, maxWait);
                granted.add(Thread.currentThread().getName());
                if (releaseOnGrant) {
                  lease.release();
                }
                outcome.complete(lease);
              } catch (Throwable e) {
                outcome.completeExceptionally(e);
              }
            },
            name);
    thread.setDaemon(true);
    Waiter waiter = new Waiter(name, thread, outcome);
    waiters.add(waiter);
    thread.start();
    awaitTrue(() -> sleeper.parked.contains(thread), name + " waits");
    return waiter;
  }

  private List<Integer> attemptsOf(String... names) {
    List<Integer> out = new ArrayList<>();
    for (String name : names) {
      AtomicInteger n = attempts.get(name);
      out.add(n == null ? 0 : n.get());
    }
    return out;
  }

  /** Another client lets go of {@code key}, node after node; each node reports it. */
  private void releaseElsewhere(String key) {
    for (FaultyNode node : cluster.nodes) {
      assertThat(node.store.release(key, "another-client").await(Duration.ZERO)).isTrue();
    }
  }

  private static void awaitTrue(BooleanSupplier condition, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    for (int i = 0; i < 20_000 && !condition.getAsBoolean(); i++) {
      assertThat(System.nanoTime() - deadline).as("timed out waiting until %s", what).isNegative();
      Thread.sleep(1);
    }
    assertThat(condition.getAsBoolean()).as(what).isTrue();
  }

  /**
   * A sleeper whose pauses between attempts end only when the waiter is woken (or, should a test go
   * wrong, after 10 s of real time), so polling never causes an attempt. Short sleeps (the jitter
   * after a wake) only move the fake ticker.
   */
  static final class Parking implements Sleeper {
    final Set<Thread> parked = ConcurrentHashMap.newKeySet();

    /** Threads whose wake comes with an interrupt: the await throws instead of returning. */
    final Set<Thread> interruptOnWake = ConcurrentHashMap.newKeySet();

    private final FakeTicker ticker;

    Parking(FakeTicker ticker) {
      this.ticker = ticker;
    }

    @Override
    public void sleep(long nanos) {
      ticker.advanceNanos(nanos);
    }

    @Override
    public boolean await(Wakeup wakeup, long nanos) throws InterruptedException {
      Thread me = Thread.currentThread();
      long bound = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      parked.add(me);
      try {
        while (!wakeup.isRaised()) {
          if (Thread.interrupted()) {
            throw new InterruptedException("interrupted while waiting (test)");
          }
          if (System.nanoTime() - bound > 0) {
            ticker.advanceNanos(nanos);
            return false;
          }
          LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(10)); // raising unparks
        }
        if (interruptOnWake.contains(me)) {
          throw new InterruptedException("interrupted as it was woken (test)");
        }
        return true;
      } finally {
        parked.remove(me);
      }
    }
  }
}
