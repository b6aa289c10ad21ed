package io.redlock.engine.internal;

import static io.redlock.engine.internal.Cluster.times;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.RedlockSettings;
import io.redlock.ReleaseOutcome;
import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("A lease")
class QuorumLeaseTest {
  private static final String KEY = "report-7";
  private static final Duration TTL = Duration.ofSeconds(1);

  /** 1 s TTL: 1 000 - (10 + 2) drift - 1 ms, the in-memory nodes' TTL precision. */
  private static final Duration FRESH_VALIDITY = Duration.ofMillis(987);

  @Nested
  @DisplayName("extends")
  class Extension {

    @Test
    void on_a_majority_and_recomputes_validity_from_the_start_of_the_call() {
      Cluster cluster = new Cluster(5);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      cluster.ticker.advance(Duration.ofMillis(500));
      cluster.nodes.forEach(n -> n.latency(Duration.ofMillis(2)));

      assertThat(lease.extend(Duration.ofSeconds(10))).isTrue();

      // 10 000 - 5 x 2 (elapsed during the call) - (100 + 2) drift - 1 (precision)
      assertThat(lease.remainingValidity()).isEqualTo(Duration.ofMillis(9_887));
      assertThat(lease.extensions()).isEqualTo(1);
      assertThat(cluster.extendCalls()).isEqualTo(times(5, 1));
      // the last node extended at the end of the fan-out: its key has the full new TTL
      assertThat(cluster.node(4).store.remainingTtl(KEY)).contains(Duration.ofSeconds(10));
      cluster.assertRepliesSettled();
    }

    @Test
    void with_a_minority_down() {
      Cluster cluster = new Cluster(5);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      cluster.node(0).down();
      cluster.node(1).throwing(new IllegalStateException("node-1 is closed"));

      assertThat(lease.extend(Duration.ofSeconds(5))).isTrue();
      assertThat(lease.remainingValidity()).isEqualTo(Duration.ofMillis(5_000 - 53));
    }

    @Test
    void not_without_a_majority_and_then_the_old_validity_stands() {
      Cluster cluster = new Cluster(5);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      cluster.ticker.advance(Duration.ofMillis(100));
      for (int i = 0; i < 3; i++) {
        cluster.node(i).down();
      }

      assertThat(lease.extend(Duration.ofSeconds(10))).isFalse();

      assertThat(lease.remainingValidity()).isEqualTo(FRESH_VALIDITY.minusMillis(100));
      assertThat(lease.extensions()).isZero();
      assertThat(lease.isValid()).isTrue();
    }

    @Test
    void not_when_the_key_was_lost_to_another_client_on_a_majority() {
      Cluster cluster = new Cluster(3);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      for (int i = 0; i < 2; i++) {
        cluster.node(i).store.release(KEY, lease.token());
      }
      cluster.holdElsewhere(KEY, 0, 1);

      assertThat(lease.extend(Duration.ofSeconds(10))).isFalse();
      assertThat(cluster.node(0).store.owner(KEY)).contains("another-client");
    }

    @Test
    void not_after_the_validity_ran_out_and_without_asking_the_nodes() {
      Cluster cluster = new Cluster(5);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      cluster.ticker.advance(FRESH_VALIDITY);

      assertThat(lease.extend(Duration.ofSeconds(10))).isFalse();

      assertThat(cluster.extendCalls()).isEqualTo(times(5, 0));
      assertThat(lease.isValid()).isFalse();
    }

    @Test
    void not_when_the_majority_answered_only_after_the_validity_ran_out() {
      Cluster cluster = new Cluster(5);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      cluster.ticker.advance(Duration.ofMillis(900)); // 88 ms left
      cluster.nodes.forEach(n -> n.latency(Duration.ofMillis(20))); // answers after 100 ms

      assertThat(lease.extend(Duration.ofSeconds(10))).isFalse();

      assertThat(cluster.extendCalls()).isEqualTo(times(5, 1));
      assertThat(lease.extensions()).isZero();
      assertThat(lease.isValid()).isFalse();
    }

    @Test
    void waits_for_slow_nodes_no_longer_than_the_remaining_validity() {
      Cluster cluster = new Cluster(5);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      cluster.ticker.advance(FRESH_VALIDITY.minusMillis(30)); // 30 ms left, node timeout 50 ms
      for (int i = 0; i < 3; i++) {
        cluster.node(i).slow();
      }
      long before = cluster.ticker.read();

      assertThat(lease.extend(Duration.ofSeconds(10))).isFalse();

      assertThat(cluster.ticker.read() - before).isEqualTo(Duration.ofMillis(30).toNanos());
      cluster.assertRepliesSettled();
    }

    @Test
    void that_failed_while_shortening_keeps_the_shorter_validity() {
      Cluster cluster = new Cluster(5);
      Lease lease = cluster.redlock().tryAcquire(KEY, Duration.ofSeconds(10)).orElseThrow();
      for (int i = 2; i < 5; i++) {
        cluster.node(i).down();
      }

      // two nodes moved their expiry to 1 s: the lease must not claim the old 10 s any more
      assertThat(lease.extend(TTL)).isFalse();

      assertThat(lease.remainingValidity()).isEqualTo(FRESH_VALIDITY);
    }

    @Test
    void at_most_max_extensions_times() {
      Cluster cluster = new Cluster(3);
      Lease lease =
          cluster.redlock(Cluster.SETTINGS.withMaxExtensions(2)).tryAcquire(KEY, TTL).orElseThrow();

      assertThat(lease.extend(TTL)).isTrue();
      assertThat(lease.extend(TTL)).isTrue();
      assertThatThrownBy(() -> lease.extend(TTL))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("maxExtensions 2")
          .hasMessageContaining("acquire a new lease");

      assertThat(lease.extensions()).isEqualTo(2);
      assertThat(cluster.extendCalls()).isEqualTo(times(3, 2));
    }

    @Test
    void never_when_max_extensions_is_zero() {
      Cluster cluster = new Cluster(3);
      Lease lease =
          cluster.redlock(Cluster.SETTINGS.withMaxExtensions(0)).tryAcquire(KEY, TTL).orElseThrow();

      assertThatThrownBy(() -> lease.extend(TTL)).isInstanceOf(IllegalStateException.class);
      assertThat(cluster.extendCalls()).isEqualTo(times(3, 0));
    }

    @Test
    void not_after_release() {
      Cluster cluster = new Cluster(3);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      lease.release();

      assertThatThrownBy(() -> lease.extend(TTL))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("released")
          .hasMessageContaining(KEY);
      assertThat(cluster.extendCalls()).isEqualTo(times(3, 0));
    }

    @Test
    void rejects_a_bad_ttl_naming_it() {
      Cluster cluster = new Cluster(3);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

      assertThatThrownBy(() -> lease.extend(null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("ttl");
      assertThatThrownBy(() -> lease.extend(Duration.ofMillis(-5)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("ttl must be positive");
      assertThat(lease.isValid()).isTrue();
    }
  }

  @Nested
  @DisplayName("releases")
  class Release {

    @Test
    void on_every_node_and_reports_what_it_deleted() {
      Cluster cluster = new Cluster(5);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

      ReleaseOutcome outcome = lease.release();

      assertThat(outcome).isEqualTo(new ReleaseOutcome(5, 5, 5, List.of()));
      assertThat(outcome.complete()).isTrue();
      assertThat(cluster.holding(KEY)).isZero();
      assertThat(lease.isValid()).isFalse();
      assertThat(lease.remainingValidity()).isEqualTo(Duration.ZERO);
      cluster.assertRepliesSettled();
    }

    @Test
    void without_throwing_when_nodes_are_down_and_names_them() {
      Cluster cluster = new Cluster(5);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      cluster.node(1).down();
      cluster.node(3).throwing(new IllegalStateException("node-3 is closed"));
      cluster.node(4).slow();

      ReleaseOutcome outcome = lease.release();

      assertThat(outcome.deleted()).isEqualTo(2);
      assertThat(outcome.answered()).isEqualTo(2);
      assertThat(outcome.nodes()).isEqualTo(5);
      assertThat(outcome.failedNodes()).containsExactly("node-1", "node-3", "node-4");
      assertThat(outcome.complete()).isFalse();
      cluster.node(4).deliverLate(); // the slow release lands late and still deletes
      assertThat(cluster.node(4).store.owner(KEY)).isEmpty();
      cluster.assertRepliesSettled();
    }

    @Test
    void without_throwing_when_the_redlock_was_closed() {
      Cluster cluster = new Cluster(3);
      QuorumRedlock redlock = cluster.redlock();
      Lease lease = redlock.tryAcquire(KEY, TTL).orElseThrow();
      redlock.close();

      ReleaseOutcome outcome = lease.release();

      assertThat(outcome.answered()).isZero();
      assertThat(outcome.failedNodes()).containsExactly("node-0", "node-1", "node-2");
    }

    @Test
    void once_and_returns_the_first_outcome_again() {
      Cluster cluster = new Cluster(3);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

      ReleaseOutcome first = lease.release();
      ReleaseOutcome second = lease.release();
      lease.close();

      assertThat(second).isSameAs(first);
      assertThat(cluster.releaseCalls()).isEqualTo(times(3, 1));
    }

    @Test
    void only_its_own_key() {
      Cluster cluster = new Cluster(3);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      cluster.ticker.advance(TTL); // expired everywhere
      cluster.holdElsewhere(KEY, 0, 1, 2);

      ReleaseOutcome outcome = lease.release();

      assertThat(outcome.deleted()).isZero();
      assertThat(outcome.answered()).isEqualTo(3);
      assertThat(cluster.holding(KEY)).isEqualTo(3);
    }

    @Test
    void from_another_thread() throws Exception {
      Cluster cluster = new Cluster(3);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      ExecutorService other = Executors.newSingleThreadExecutor();
      try {
        ReleaseOutcome outcome = other.submit(lease::release).get(10, TimeUnit.SECONDS);

        assertThat(outcome.deleted()).isEqualTo(3);
        assertThat(cluster.holding(KEY)).isZero();
        assertThat(lease.isValid()).isFalse();
      } finally {
        other.shutdownNow();
      }
    }

    @Test
    void once_when_many_threads_release_at_the_same_time() throws Exception {
      Cluster cluster = new Cluster(5);
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
      int threads = 8;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      CountDownLatch go = new CountDownLatch(1);
      try {
        List<Future<ReleaseOutcome>> outcomes = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
          outcomes.add(
              pool.submit(
                  () -> {
                    go.await();
                    return lease.release();
                  }));
        }
        go.countDown();
        ReleaseOutcome first = outcomes.get(0).get(10, TimeUnit.SECONDS);
        for (Future<ReleaseOutcome> f : outcomes) {
          assertThat(f.get(10, TimeUnit.SECONDS)).isSameAs(first);
        }
        assertThat(first.deleted()).isEqualTo(5);
        assertThat(cluster.releaseCalls()).isEqualTo(times(5, 1));
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  @DisplayName("stays consistent when extend and release race on real threads")
  void extend_and_release_race() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    List<LockNode> nodes = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      nodes.add(new InMemoryLockNode("race-" + i, Ticker.system()));
    }
    try (Redlock redlock = new QuorumRedlock(nodes, RedlockSettings.defaults(), Ticker.system())) {
      for (int round = 0; round < 200; round++) {
        Lease lease = redlock.tryAcquire(KEY, Duration.ofSeconds(30)).orElseThrow();
        CountDownLatch go = new CountDownLatch(1);
        Future<Integer> extender =
            pool.submit(
                () -> {
                  go.await();
                  int extended = 0;
                  for (int i = 0; i < 1_000; i++) {
                    try {
                      if (lease.extend(Duration.ofSeconds(30))) {
                        extended++;
                      }
                    } catch (IllegalStateException released) {
                      assertThat(released).hasMessageContaining("released");
                      return extended;
                    }
                  }
                  return extended;
                });
        Future<ReleaseOutcome> releaser =
            pool.submit(
                () -> {
                  go.await();
                  return lease.release();
                });
        go.countDown();
        ReleaseOutcome outcome = releaser.get(10, TimeUnit.SECONDS);
        int extended = extender.get(10, TimeUnit.SECONDS);

        assertThat(outcome.deleted()).isEqualTo(5);
        assertThat(lease.extensions()).isEqualTo(extended);
        assertThat(lease.isValid()).isFalse();
        for (LockNode node : nodes) {
          assertThat(((InMemoryLockNode) node).owner(KEY)).isEmpty();
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
