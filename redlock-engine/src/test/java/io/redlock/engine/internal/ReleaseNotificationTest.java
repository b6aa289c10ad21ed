package io.redlock.engine.internal;

import static io.redlock.engine.internal.Cluster.times;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Waiting for a release")
class ReleaseNotificationTest {
  private static final String KEY = "invoice-42";
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final long MIN_PAUSE = Duration.ofMillis(50).toNanos();
  private static final long MAX_PAUSE = Duration.ofMillis(250).toNanos();

  @AfterEach
  void clearInterruptFlag() {
    Thread.interrupted();
  }

  private static Cluster notifyingCluster(int n) {
    Cluster cluster = new Cluster(n);
    cluster.nodes.forEach(FaultyNode::notifyingReleases);
    return cluster;
  }

  private static void releaseElsewhere(Cluster cluster, int... indexes) {
    for (int i : indexes) {
      assertThat(cluster.node(i).store.release(KEY, "another-client").await(Duration.ZERO))
          .isTrue();
    }
  }

  @Test
  void a_release_notification_from_the_nodes_ends_the_pause_at_once() throws Exception {
    Cluster cluster = notifyingCluster(5);
    cluster.holdElsewhere(KEY, 0, 1, 2);
    cluster.onPause =
        pause -> {
          if (pause == 1) {
            releaseElsewhere(cluster, 0, 1, 2);
          }
        };
    QuorumRedlock redlock = cluster.redlock();
    long before = cluster.ticker.read();

    Lease lease = redlock.acquire(KEY, TTL, Duration.ofSeconds(5));

    assertThat(cluster.holding(KEY, lease.token())).isEqualTo(5);
    assertThat(cluster.acquireCalls()).isEqualTo(times(5, 2));
    assertThat(cluster.wakeups).as("pauses cut short").hasSize(1);
    assertThat(cluster.pauses).as("the pause cut short, and no jitter after it").hasSize(1);
    assertThat(cluster.ticker.read() - before)
        .as("time between the failed attempt and the next")
        .isZero();
    assertThat(cluster.calls(n -> n.subscribeCalls.get())).isEqualTo(times(5, 1));
    assertThat(cluster.calls(n -> n.openSubscriptions.get())).isEqualTo(times(5, 0));
    cluster.assertRepliesSettled();
  }

  @Test
  @DisplayName(
      "a waiter whose attempt found the lock held on every node retries at once after a release,"
          + " with no jitter")
  void a_waiter_that_raced_nobody_retries_without_jitter() throws Exception {
    Cluster cluster = notifyingCluster(5);
    cluster.holdElsewhere(KEY, 0, 1, 2, 3, 4);
    cluster.onPause =
        pause -> {
          if (pause == 1) {
            releaseElsewhere(cluster, 0, 1, 2, 3, 4);
          }
        };
    long before = cluster.ticker.read();

    Lease lease = cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(5));

    assertThat(cluster.holding(KEY, lease.token())).isEqualTo(5);
    assertThat(cluster.pauses).as("the pause that the release cut short, no jitter").hasSize(1);
    assertThat(cluster.wakeups).hasSize(1);
    assertThat(cluster.ticker.read() - before).isZero();
  }

  /**
   * Nodes 0 and 1 are held by another client and node 2 is down: an attempt takes 3 and 4, and
   * nobody has a quorum. During the second attempt the other client lets go of 0 and 1.
   */
  private static Cluster splitVoteWithAReleaseDuringTheSecondAttempt(int heldElsewhere) {
    Cluster cluster = notifyingCluster(5);
    if (heldElsewhere == 2) {
      cluster.holdElsewhere(KEY, 0, 1);
      cluster.node(2).down();
    } else {
      cluster.holdElsewhere(KEY, 0, 1, 2);
    }
    AtomicInteger lastNodeCalls = new AtomicInteger();
    cluster.node(4).beforeAcquire =
        () -> {
          if (lastNodeCalls.incrementAndGet() == 2) {
            releaseElsewhere(cluster, 0, 1); // nodes 0 and 1 have refused attempt 2 already
          }
        };
    return cluster;
  }

  @Test
  @DisplayName(
      "after a split vote (nobody won) during which a release was reported, the waiter retries"
          + " after a jitter of at most 2 ms")
  void a_split_vote_is_retried_after_a_jitter() throws Exception {
    Cluster cluster = splitVoteWithAReleaseDuringTheSecondAttempt(2);

    Lease lease = cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(5));

    assertThat(cluster.holding(KEY, lease.token())).isEqualTo(4);
    assertThat(cluster.acquireCalls()).isEqualTo(times(5, 3));
    assertThat(cluster.pauses).hasSize(2);
    assertThat(cluster.pauses.get(0)).as("a polling pause").isBetween(MIN_PAUSE, MAX_PAUSE);
    assertThat(cluster.pauses.get(1))
        .as("then, after the split vote, a jitter")
        .isBetween(1L, Timing.WAKEUP_JITTER_NANOS);
    assertThat(cluster.wakeups).isEmpty();
    cluster.assertRepliesSettled();
  }

  @Test
  @DisplayName(
      "after an attempt lost to a holder of a quorum, a release reported during it is retried at"
          + " once")
  void a_lost_attempt_with_a_release_noted_is_retried_at_once() throws Exception {
    Cluster cluster = splitVoteWithAReleaseDuringTheSecondAttempt(3);
    long before = cluster.ticker.read();

    Lease lease = cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(5));

    assertThat(cluster.holding(KEY, lease.token())).isEqualTo(4);
    assertThat(cluster.acquireCalls()).isEqualTo(times(5, 3));
    assertThat(cluster.wakeups).as("the second pause ended before it began").hasSize(1);
    assertThat(cluster.ticker.read() - before)
        .as("only the first pause took time")
        .isEqualTo(cluster.pauses.get(0));
    cluster.assertRepliesSettled();
  }

  @Test
  void only_the_nodes_that_declare_notifications_are_asked_and_one_of_them_is_enough()
      throws Exception {
    Cluster cluster = new Cluster(3);
    cluster.node(2).notifyingReleases();
    cluster.holdElsewhere(KEY, 0, 1, 2);
    cluster.onPause =
        pause -> {
          if (pause == 1) {
            releaseElsewhere(cluster, 0, 1, 2);
          }
        };

    Lease lease = cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(5));

    assertThat(lease.isValid()).isTrue();
    assertThat(cluster.wakeups).hasSize(1);
    assertThat(cluster.calls(n -> n.subscribeCalls.get())).containsExactly(0, 0, 1);
    assertThat(cluster.calls(n -> n.openSubscriptions.get())).isEqualTo(times(3, 0));
    cluster.assertRepliesSettled();
  }

  @Test
  void without_notifications_the_pauses_stay_random_within_the_configured_bounds()
      throws Exception {
    Cluster cluster = new Cluster(5);
    cluster.holdElsewhere(KEY, 0, 1, 2);
    cluster.onPause =
        pause -> {
          if (pause == 6) {
            releaseElsewhere(cluster, 0, 1, 2);
          }
        };
    long before = cluster.ticker.read();

    Lease lease = cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(5));

    assertThat(lease.isValid()).isTrue();
    assertThat(cluster.wakeups).isEmpty();
    assertThat(cluster.pauses)
        .hasSize(6)
        .allSatisfy(p -> assertThat(p).isBetween(MIN_PAUSE, MAX_PAUSE));
    assertThat(new HashSet<>(cluster.pauses)).as("random, not constant").hasSizeGreaterThan(1);
    assertThat(cluster.ticker.read() - before)
        .isEqualTo(cluster.pauses.stream().mapToLong(Long::longValue).sum());
    assertThat(cluster.calls(n -> n.subscribeCalls.get())).isEqualTo(times(5, 0));
  }

  @Test
  void a_notification_that_never_comes_leaves_the_random_pauses_in_place() {
    Cluster cluster = notifyingCluster(3);
    cluster.holdElsewhere(KEY, 0, 1, 2);

    assertThatThrownBy(() -> cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(1)))
        .isInstanceOf(LockTimeoutException.class);

    assertThat(cluster.wakeups).isEmpty();
    assertThat(cluster.pauses.subList(0, cluster.pauses.size() - 1))
        .allSatisfy(p -> assertThat(p).isBetween(MIN_PAUSE, MAX_PAUSE));
    assertThat(cluster.calls(n -> n.subscribeCalls.get()))
        .as("one registration per acquire call, not per attempt")
        .isEqualTo(times(3, 1));
    assertThat(cluster.calls(n -> n.openSubscriptions.get()))
        .as("closed when the call gives up")
        .isEqualTo(times(3, 0));
  }

  @Test
  @DisplayName(
      "a waiter is not woken by the releases of its own failed attempt (lock held on a bare"
          + " quorum)")
  void the_echoes_of_a_failed_attempt_do_not_wake_the_waiter() {
    Cluster cluster = notifyingCluster(5);
    cluster.holdElsewhere(KEY, 0, 1, 2); // each attempt takes nodes 3 and 4, then releases them

    assertThatThrownBy(() -> cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(1)))
        .isInstanceOf(LockTimeoutException.class);

    assertThat(cluster.wakeups).as("pauses cut short").isEmpty();
    assertThat(cluster.node(0).acquireCalls.get())
        .as("attempts in 1 s of pauses of at least 50 ms")
        .isLessThanOrEqualTo(1 + 1_000 / 50);
    assertThat(cluster.calls(n -> n.openSubscriptions.get())).isEqualTo(times(5, 0));
  }

  @Test
  void an_uncontended_acquire_registers_nothing() throws Exception {
    Cluster cluster = notifyingCluster(3);

    cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(1)).release();

    assertThat(cluster.calls(n -> n.subscribeCalls.get())).isEqualTo(times(3, 0));
  }

  @Test
  void a_lease_released_through_the_same_redlock_wakes_a_waiter_of_this_jvm() throws Exception {
    Cluster cluster = new Cluster(3); // no node notifies: the JVM-local path alone
    QuorumRedlock redlock = cluster.redlock();
    Lease first = redlock.acquire(KEY, TTL, Duration.ZERO);
    cluster.onPause =
        pause -> {
          if (pause == 1) {
            first.release();
          }
        };
    long before = cluster.ticker.read();

    Lease second = redlock.acquire(KEY, TTL, Duration.ofSeconds(5));

    assertThat(cluster.holding(KEY, second.token())).isEqualTo(3);
    assertThat(cluster.wakeups).hasSize(1);
    assertThat(cluster.ticker.read() - before).as("retried at once").isZero();
  }

  @Test
  void an_interrupt_while_waiting_for_a_notification_is_reported_and_cleans_up() {
    Cluster cluster = notifyingCluster(3);
    cluster.holdElsewhere(KEY, 0, 1, 2);
    cluster.onPause =
        pause -> {
          throw new InterruptedException();
        };

    assertThatThrownBy(() -> cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(5)))
        .isInstanceOf(InterruptedException.class);

    assertThat(cluster.calls(n -> n.openSubscriptions.get())).isEqualTo(times(3, 0));
  }

  @Test
  @DisplayName(
      "on real threads, a waiter parked for a 5 s pause takes the lock soon after a release")
  void a_parked_waiter_is_woken_by_a_release_on_another_thread() throws Exception {
    List<LockNode> nodes =
        List.of(new InMemoryLockNode("a"), new InMemoryLockNode("b"), new InMemoryLockNode("c"));
    RedlockSettings slowPolling =
        RedlockSettings.defaults().withRetry(3, Duration.ofSeconds(5), Duration.ofSeconds(5));
    // A separate Redlock per client, so only the nodes' notifications can wake the waiter.
    try (QuorumRedlock holderSide = new QuorumRedlock(nodes, slowPolling, Ticker.system());
        QuorumRedlock waiterSide =
            new QuorumRedlock(
                nodes.stream().map(Shared::new).map(LockNode.class::cast).toList(),
                slowPolling,
                Ticker.system())) {
      Lease held = holderSide.acquire(KEY, TTL, Duration.ZERO);
      CompletableFuture<Long> waited =
          CompletableFuture.supplyAsync(
              () -> {
                long start = System.nanoTime();
                try (Lease lease = waiterSide.acquire(KEY, TTL, Duration.ofSeconds(30))) {
                  return System.nanoTime() - start;
                } catch (InterruptedException e) {
                  throw new IllegalStateException(e);
                }
              });
      Thread.sleep(300); // the waiter's first attempt fails and it parks for 5 s
      held.release();

      assertThat(waited.get(20, TimeUnit.SECONDS))
          .as("wait: well under the 5 s pause (300 ms until the release, then a notification)")
          .isLessThan(Duration.ofMillis(4_000).toNanos());
    }
  }

  /** Another client of the same in-memory store, closing without closing the store. */
  private record Shared(LockNode store) implements LockNode {
    @Override
    public String name() {
      return store.name() + "'";
    }

    @Override
    public io.redlock.spi.NodeCapabilities capabilities() {
      return store.capabilities();
    }

    @Override
    public io.redlock.spi.Reply<io.redlock.spi.NodeStatus> status() {
      return store.status();
    }

    @Override
    public io.redlock.spi.Reply<io.redlock.spi.AcquireResult> tryAcquire(
        String key, String token, Duration ttl) {
      return store.tryAcquire(key, token, ttl);
    }

    @Override
    public io.redlock.spi.Reply<Boolean> release(String key, String token) {
      return store.release(key, token);
    }

    @Override
    public io.redlock.spi.Reply<Boolean> extend(String key, String token, Duration ttl) {
      return store.extend(key, token, ttl);
    }

    @Override
    public io.redlock.spi.ReleaseSubscription onRelease(String key, Runnable listener) {
      return store.onRelease(key, listener);
    }

    @Override
    public void close() {}
  }
}
