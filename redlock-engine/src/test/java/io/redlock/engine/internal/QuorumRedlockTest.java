package io.redlock.engine.internal;

import static io.redlock.engine.internal.Cluster.times;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.RedlockSettings;
import io.redlock.RedlockTransientException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.random.RandomGenerator;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@DisplayName("The quorum engine")
class QuorumRedlockTest {
  private static final String KEY = "invoice-42";
  private static final Duration TTL = Duration.ofSeconds(10);

  /** Drift for a 10 s TTL with the default settings: 10 s x 0.01 + 2 ms. */
  /** The drift allowance of a 10 s TTL (100 + 2 ms), and the nodes' 1 ms TTL precision. */
  private static final Duration DRIFT_10S = Duration.ofMillis(103);

  private static RedlockSettings oneAttempt() {
    return Cluster.SETTINGS.withRetry(1, Duration.ZERO, Duration.ZERO);
  }

  @AfterEach
  void clearInterruptFlag() {
    Thread.interrupted(); // never leak an interrupt into the next test
  }

  @Nested
  @DisplayName("counts a strict majority")
  class Quorum {

    @ParameterizedTest(name = "N = {0}")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7})
    void acquires_on_every_node_when_all_are_up(int n) {
      Cluster cluster = new Cluster(n);
      QuorumRedlock redlock = cluster.redlock();

      Lease lease = redlock.tryAcquire(KEY, TTL).orElseThrow();

      assertThat(redlock.quorum()).isEqualTo(n / 2 + 1);
      assertThat(cluster.holding(KEY, lease.token())).isEqualTo(n);
      assertThat(lease.isValid()).isTrue();
      assertThat(lease.resource()).isEqualTo(KEY);
      assertThat(cluster.acquireCalls()).isEqualTo(times(n, 1));
      cluster.assertRepliesSettled();
    }

    @ParameterizedTest(name = "N = {0}")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7})
    void acquires_when_all_but_a_bare_majority_are_down(int n) {
      Cluster cluster = new Cluster(n);
      int quorum = n / 2 + 1;
      for (int i = quorum; i < n; i++) {
        cluster.node(i).down();
      }

      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

      assertThat(cluster.holding(KEY, lease.token())).isEqualTo(quorum);
      assertThat(cluster.acquireCalls()).isEqualTo(times(n, 1));
      cluster.assertRepliesSettled();
    }

    @ParameterizedTest(name = "N = {0}")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7})
    void gives_up_when_a_majority_is_down_and_leaves_no_key(int n) {
      Cluster cluster = new Cluster(n);
      int quorum = n / 2 + 1;
      for (int i = quorum - 1; i < n; i++) {
        cluster.node(i).down();
      }

      Optional<Lease> lease = cluster.redlock().tryAcquire(KEY, TTL);

      assertThat(lease).isEmpty();
      assertThat(cluster.holding(KEY)).isZero();
      // three attempts, each released on every node (the down ones included)
      assertThat(cluster.acquireCalls()).isEqualTo(times(n, 3));
      assertThat(cluster.releaseCalls()).isEqualTo(times(n, 3));
      cluster.assertRepliesSettled();
    }

    @Test
    void starts_the_call_on_every_node_before_awaiting_any_reply() {
      Cluster cluster = new Cluster(5);

      cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

      List<String> events = List.copyOf(cluster.events);
      assertThat(events.subList(0, 5)).allMatch(e -> e.startsWith("start tryAcquire"));
      assertThat(events.subList(5, 10)).allMatch(e -> e.startsWith("await tryAcquire"));
    }

    @Test
    void uses_only_the_calling_thread() {
      Cluster cluster = new Cluster(5);
      cluster.node(4).down();

      cluster.redlock().tryAcquire(KEY, TTL).orElseThrow().release();

      for (FaultyNode node : cluster.nodes) {
        assertThat(node.callerThreads).containsExactly(Thread.currentThread());
      }
    }

    @Test
    void loses_to_a_holder_of_a_majority_and_keeps_the_holders_keys() {
      Cluster cluster = new Cluster(5);
      cluster.holdElsewhere(KEY, 0, 1, 2);

      assertThat(cluster.redlock().tryAcquire(KEY, TTL)).isEmpty();

      for (int i = 0; i < 3; i++) {
        assertThat(cluster.node(i).store.owner(KEY)).contains("another-client");
      }
      assertThat(cluster.holding(KEY)).isEqualTo(3);
    }
  }

  @Nested
  @DisplayName("treats a node that cannot answer as a no")
  class NodeFailures {

    @Test
    void a_node_that_throws_when_a_call_starts_counts_as_failed() {
      Cluster cluster = new Cluster(5);
      cluster.node(0).throwing(new RedlockTransientException("node-0", "refused", null));
      cluster.node(1).throwing(new IllegalStateException("boom"));

      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

      assertThat(cluster.holding(KEY, lease.token())).isEqualTo(3);
    }

    @Test
    void a_majority_that_throws_when_calls_start_means_no_lease() {
      Cluster cluster = new Cluster(5);
      for (int i = 0; i < 3; i++) {
        cluster.node(i).throwing(new RuntimeException("driver bug"));
      }

      assertThat(cluster.redlock(oneAttempt()).tryAcquire(KEY, TTL)).isEmpty();
      assertThat(cluster.holding(KEY)).isZero();
    }

    @Test
    void a_closed_node_counts_as_failed() {
      Cluster cluster = new Cluster(5);
      QuorumRedlock redlock = cluster.redlock(oneAttempt());
      cluster.node(0).store.close();
      cluster.node(1).store.close();

      assertThat(redlock.tryAcquire(KEY, TTL)).isPresent();

      cluster.node(2).store.close();
      assertThatThrownBy(() -> redlock.acquire("other", TTL, Duration.ZERO))
          .isInstanceOf(LockTimeoutException.class)
          .hasMessageContaining("node-0, node-1, node-2");
    }

    @Test
    void an_illegal_argument_from_a_node_propagates_and_nothing_lingers()
        throws InterruptedException {
      Cluster cluster = new Cluster(5);
      IllegalArgumentException rejected = new IllegalArgumentException("key too long for node-3");
      cluster.node(3).throwing(rejected);

      QuorumRedlock redlock = cluster.redlock();
      assertThatThrownBy(() -> redlock.tryAcquire(KEY, TTL)).isSameAs(rejected);

      redlock.scheduler.awaitChores(10_000); // grants that came in are released there
      assertThat(cluster.holding(KEY)).isZero();
      assertThat(cluster.acquireCalls()).isEqualTo(List.of(1, 1, 1, 1, 0));
      cluster.assertRepliesSettled();
    }

    @Test
    void slow_nodes_past_the_deadline_count_as_no_and_a_late_acquired_is_released()
        throws InterruptedException {
      Cluster cluster = new Cluster(5);
      for (int i = 0; i < 3; i++) {
        cluster.node(i).slow();
      }
      long before = cluster.ticker.read();

      QuorumRedlock redlock = cluster.redlock(oneAttempt());
      assertThat(redlock.tryAcquire(KEY, TTL)).isEmpty();

      // 50 ms once for the acquire replies (one shared deadline, not one per slow node), then
      // 50 ms once for the cleanup releases
      assertThat(cluster.ticker.read() - before).isEqualTo(Duration.ofMillis(100).toNanos());
      assertThat(cluster.holding(KEY)).isZero();
      for (int i = 0; i < 3; i++) {
        cluster.node(i).deliverLate(); // the request lands now and answers "acquired"
      }
      redlock.scheduler.awaitChores(10_000); // late grants are released there
      assertThat(cluster.holding(KEY)).isZero();
      for (int i = 0; i < 3; i++) {
        assertThat(cluster.node(i).store.owner(KEY)).isEmpty();
        assertThat(cluster.node(i).releaseCalls.get()).isEqualTo(2); // cleanup + late answer
      }
      cluster.assertRepliesSettled();
    }

    @Test
    void a_late_answer_to_a_request_that_landed_in_time_is_released_too() {
      Cluster cluster = new Cluster(5);
      for (int i = 0; i < 3; i++) {
        cluster.node(i).slowAnswer();
      }

      assertThat(cluster.redlock(oneAttempt()).tryAcquire(KEY, TTL)).isEmpty();
      for (int i = 0; i < 3; i++) {
        cluster.node(i).deliverLate();
      }

      assertThat(cluster.holding(KEY)).isZero();
      cluster.assertRepliesSettled();
    }

    @Test
    void a_slow_minority_still_gives_a_lease_whose_validity_includes_the_wait() {
      Cluster cluster = new Cluster(5);
      cluster.node(3).slow();
      cluster.node(4).slow();

      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

      // elapsed = the 50 ms node timeout spent waiting for the slow pair
      assertThat(lease.remainingValidity())
          .isEqualTo(TTL.minus(Duration.ofMillis(50)).minus(DRIFT_10S));
      cluster.node(3).deliverLate();
      cluster.node(4).deliverLate();
      // the late keys are the lease's own while it is held...
      assertThat(cluster.holding(KEY, lease.token())).isEqualTo(5);
      // ...and go with its release
      assertThat(lease.release().deleted()).isEqualTo(5);
      assertThat(cluster.holding(KEY)).isZero();
      cluster.assertRepliesSettled();
    }

    @Test
    void a_late_acquired_after_the_lease_was_released_is_released() {
      Cluster cluster = new Cluster(5);
      cluster.node(3).slow();
      cluster.node(4).slow();
      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

      lease.release();
      cluster.node(3).deliverLate();
      cluster.node(4).deliverLate();

      assertThat(cluster.holding(KEY)).isZero();
      cluster.assertRepliesSettled();
    }

    @Test
    void an_interrupt_while_awaiting_gives_up_releases_everything_and_keeps_the_flag() {
      Cluster cluster = new Cluster(5);
      cluster.node(1).interrupting();

      Optional<Lease> lease = cluster.redlock().tryAcquire(KEY, TTL);

      assertThat(Thread.interrupted()).isTrue();
      assertThat(lease).isEmpty();
      assertThat(cluster.acquireCalls()).isEqualTo(times(5, 1)); // no retry after an interrupt
      cluster.node(1).deliverLate();
      assertThat(cluster.holding(KEY)).isZero();
      cluster.assertRepliesSettled();
    }
  }

  @Nested
  @DisplayName("measures validity with the ticker")
  class Timing {

    @Test
    void validity_is_ttl_minus_elapsed_minus_drift_exactly() {
      Cluster cluster = new Cluster(5);
      cluster.nodes.forEach(n -> n.acquireLatency(Duration.ofMillis(3)));

      Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

      // 10 000 - 5 x 3 (elapsed) - 102 (10 000 x 0.01 + 2)
      assertThat(lease.remainingValidity()).isEqualTo(Duration.ofMillis(9_882));
      cluster.ticker.advance(Duration.ofSeconds(1));
      assertThat(lease.remainingValidity()).isEqualTo(Duration.ofMillis(8_882));
      cluster.ticker.advance(Duration.ofMillis(8_882));
      assertThat(lease.remainingValidity()).isEqualTo(Duration.ZERO);
      assertThat(lease.isValid()).isFalse();
    }

    @Test
    void drift_factor_and_buffer_come_from_the_settings() {
      Cluster cluster = new Cluster(3);
      RedlockSettings settings =
          Cluster.SETTINGS.withDriftFactor(0.1).withDriftBuffer(Duration.ofMillis(7));

      Lease lease = cluster.redlock(settings).tryAcquire(KEY, Duration.ofSeconds(2)).orElseThrow();

      assertThat(lease.remainingValidity()).isEqualTo(Duration.ofMillis(2_000 - 200 - 7 - 1));
    }

    @Test
    void an_acquisition_slower_than_the_ttl_gives_no_lease_and_releases_everywhere() {
      Cluster cluster = new Cluster(5);
      cluster.nodes.forEach(n -> n.acquireLatency(Duration.ofMillis(30)));

      Optional<Lease> lease = cluster.redlock(oneAttempt()).tryAcquire(KEY, Duration.ofMillis(100));

      assertThat(lease).isEmpty();
      assertThat(cluster.releaseCalls()).isEqualTo(times(5, 1));
      assertThat(cluster.holding(KEY)).isZero();
    }

    @Test
    void a_validity_eaten_by_drift_gives_no_lease_and_deletes_keys_that_are_still_alive() {
      Cluster cluster = new Cluster(5);
      // 5 x 19.5 ms = 97.5 ms elapsed; 100 - 97.5 - 3 (drift) < 0, but no key has expired yet
      cluster.nodes.forEach(n -> n.acquireLatency(Duration.ofMillis(19).plusNanos(500_000)));

      Optional<Lease> lease = cluster.redlock(oneAttempt()).tryAcquire(KEY, Duration.ofMillis(100));

      assertThat(lease).isEmpty();
      assertThat(cluster.releaseCalls()).isEqualTo(times(5, 1));
      // at 97.5 ms the first key (set at 19.5 ms) would still live: the engine deleted it
      assertThat(cluster.holding(KEY)).isZero();
    }

    @Test
    void a_validity_below_the_minimum_gives_no_lease() {
      RedlockSettings settings = oneAttempt().withMinValidity(Duration.ofMillis(50));
      Duration ttl = Duration.ofMillis(100); // drift: 1 + 2 ms, and 1 ms of precision

      Cluster slow = new Cluster(5);
      slow.nodes.forEach(n -> n.acquireLatency(Duration.ofMillis(10))); // 100 - 50 - 4 = 46
      assertThat(slow.redlock(settings).tryAcquire(KEY, ttl)).isEmpty();
      assertThat(slow.holding(KEY)).isZero();

      Cluster fast = new Cluster(5);
      fast.nodes.forEach(n -> n.acquireLatency(Duration.ofMillis(9))); // 100 - 45 - 4 = 51
      Lease lease = fast.redlock(settings).tryAcquire(KEY, ttl).orElseThrow();
      assertThat(lease.remainingValidity()).isEqualTo(Duration.ofMillis(51));
    }

    @Test
    void a_node_timeout_longer_than_the_ttl_waits_no_longer_than_the_ttl() {
      Cluster cluster = new Cluster(3);
      cluster.node(2).slow();
      long before = cluster.ticker.read();

      Optional<Lease> lease =
          cluster
              .redlock(oneAttempt().withNodeTimeout(Duration.ofDays(365L * 1_000)))
              .tryAcquire(KEY, Duration.ofSeconds(2));

      // waited the 2 s TTL for the acquire replies (no validity left), then 2 s for the releases
      assertThat(lease).isEmpty();
      assertThat(cluster.ticker.read() - before).isEqualTo(Duration.ofSeconds(4).toNanos());
    }

    @Test
    void the_node_timeout_is_derived_from_the_ttl_by_default() {
      Cluster cluster = new Cluster(3);
      cluster.node(2).slow();
      long before = cluster.ticker.read();

      cluster
          .redlock(Cluster.SETTINGS.withNodeTimeout(null))
          .tryAcquire(KEY, Duration.ofSeconds(20))
          .orElseThrow();

      // TTL / 50 = 400 ms
      assertThat(cluster.ticker.read() - before).isEqualTo(Duration.ofMillis(400).toNanos());
    }
  }

  @Nested
  @DisplayName("releases on every node after a failed attempt")
  class ReleaseAfterFailure {

    @Test
    void including_the_nodes_that_said_no_and_the_ones_that_were_down() {
      Cluster cluster = new Cluster(5);
      cluster.holdElsewhere(KEY, 0, 1);
      cluster.node(2).down();

      assertThat(cluster.redlock(oneAttempt()).tryAcquire(KEY, TTL)).isEmpty();

      assertThat(cluster.releaseCalls()).isEqualTo(times(5, 1));
      assertThat(cluster.node(0).store.owner(KEY)).contains("another-client");
      assertThat(cluster.node(1).store.owner(KEY)).contains("another-client");
      assertThat(cluster.node(3).store.owner(KEY)).isEmpty();
      assertThat(cluster.node(4).store.owner(KEY)).isEmpty();
      cluster.assertRepliesSettled();
    }

    @Test
    void with_the_token_of_that_attempt() {
      Cluster cluster = new Cluster(3);
      cluster.holdElsewhere(KEY, 0, 1);

      cluster.redlock().tryAcquire(KEY, TTL);

      Set<String> tokens = new HashSet<>(cluster.node(2).acquireTokens);
      assertThat(tokens).hasSize(3);
      assertThat(cluster.node(2).store.owner(KEY)).isEmpty();
    }
  }

  @Nested
  @DisplayName("retries")
  class Retry {

    @Test
    void try_acquire_makes_the_configured_attempts_with_pauses_within_bounds() {
      Cluster cluster = new Cluster(5);
      cluster.holdElsewhere(KEY, 0, 1, 2);
      RedlockSettings settings =
          Cluster.SETTINGS.withRetry(4, Duration.ofMillis(10), Duration.ofMillis(30));

      assertThat(cluster.redlock(settings).tryAcquire(KEY, TTL)).isEmpty();

      assertThat(cluster.acquireCalls()).isEqualTo(times(5, 4));
      assertThat(cluster.pauses)
          .hasSize(3)
          .allSatisfy(
              p ->
                  assertThat(p)
                      .isBetween(Duration.ofMillis(10).toNanos(), Duration.ofMillis(30).toNanos()));
      assertThat(new HashSet<>(cluster.pauses)).as("random, not constant").hasSizeGreaterThan(1);
    }

    @Test
    void each_attempt_uses_a_fresh_token_shared_by_all_nodes() {
      Cluster cluster = new Cluster(3);
      cluster.holdElsewhere(KEY, 0, 1);

      cluster.redlock().tryAcquire(KEY, TTL);

      List<String> tokens = cluster.node(0).acquireTokens;
      assertThat(new HashSet<>(tokens)).hasSize(3);
      assertThat(cluster.node(1).acquireTokens).isEqualTo(tokens);
      assertThat(cluster.node(2).acquireTokens).isEqualTo(tokens);
    }

    @Test
    void pauses_reach_both_ends_of_the_range() {
      RedlockSettings settings =
          Cluster.SETTINGS.withRetry(2, Duration.ofMillis(10), Duration.ofMillis(30));
      for (boolean high : new boolean[] {false, true}) {
        Cluster cluster = new Cluster(3);
        cluster.holdElsewhere(KEY, 0, 1);
        cluster.random = extreme(high);

        cluster.redlock(settings).tryAcquire(KEY, TTL);

        assertThat(cluster.pauses).containsExactly(Duration.ofMillis(high ? 30 : 10).toNanos());
      }
    }

    @Test
    void a_fixed_pause_is_used_as_is() {
      Cluster cluster = new Cluster(3);
      cluster.holdElsewhere(KEY, 0, 1);
      RedlockSettings settings =
          Cluster.SETTINGS.withRetry(3, Duration.ofMillis(20), Duration.ofMillis(20));

      cluster.redlock(settings).tryAcquire(KEY, TTL);

      assertThat(cluster.pauses).containsExactly(20_000_000L, 20_000_000L);
    }

    @Test
    void acquire_waits_exactly_max_wait_and_then_says_the_resource_is_held() {
      Cluster cluster = new Cluster(5);
      cluster.holdElsewhere(KEY, 0, 1, 2);
      long before = cluster.ticker.read();

      assertThatThrownBy(() -> cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(1)))
          .isInstanceOfSatisfying(
              LockTimeoutException.class,
              e -> {
                assertThat(e.getMessage())
                    .contains("'" + KEY + "'")
                    .contains("held by another client")
                    .contains("3 of 5 nodes");
                assertThat(e.unreachableNodes()).isEmpty();
                assertThat(e.quorumUnreachable()).isFalse();
                assertThat(e.reason()).isEqualTo(LockTimeoutException.Reason.HELD);
                assertThat(e.resource()).isEqualTo(KEY);
                assertThat(e.waited()).isEqualTo(Duration.ofSeconds(1));
              });

      assertThat(cluster.ticker.read() - before).isEqualTo(Duration.ofSeconds(1).toNanos());
      assertThat(cluster.pauses)
          .allSatisfy(p -> assertThat(p).isLessThanOrEqualTo(Duration.ofMillis(250).toNanos()));
      assertThat(cluster.node(3).acquireCalls.get()).isEqualTo(cluster.pauses.size() + 1);
    }

    @Test
    void acquire_never_pauses_past_the_deadline() {
      Cluster cluster = new Cluster(3);
      cluster.holdElsewhere(KEY, 0, 1);
      cluster.random = extreme(true); // always the longest pause, 250 ms

      assertThatThrownBy(() -> cluster.redlock().acquire(KEY, TTL, Duration.ofMillis(120)))
          .isInstanceOf(LockTimeoutException.class);

      assertThat(cluster.pauses).containsExactly(Duration.ofMillis(120).toNanos());
      assertThat(cluster.acquireCalls()).isEqualTo(times(3, 2));
    }

    @Test
    void acquire_with_zero_max_wait_makes_exactly_one_attempt() {
      Cluster cluster = new Cluster(3);
      cluster.holdElsewhere(KEY, 0, 1);

      assertThatThrownBy(() -> cluster.redlock().acquire(KEY, TTL, Duration.ZERO))
          .isInstanceOf(LockTimeoutException.class)
          .hasMessageContaining("1 attempt");

      assertThat(cluster.acquireCalls()).isEqualTo(times(3, 1));
      assertThat(cluster.pauses).isEmpty();
    }

    @Test
    void acquire_names_the_unreachable_nodes() {
      Cluster cluster = new Cluster(5);
      cluster.node(1).down();
      cluster.node(3).down();
      cluster.node(4).throwing(new RedlockTransientException("node-4", "refused", null));

      assertThatThrownBy(() -> cluster.redlock().acquire(KEY, TTL, Duration.ofMillis(300)))
          .isInstanceOfSatisfying(
              LockTimeoutException.class,
              e -> {
                assertThat(e.getMessage())
                    .contains("too few nodes reachable")
                    .contains("2 of 5 answered")
                    .contains("node-1, node-3, node-4");
                assertThat(e.unreachableNodes()).containsExactly("node-1", "node-3", "node-4");
                assertThat(e.quorumUnreachable()).isTrue();
                assertThat(e.reason()).isEqualTo(LockTimeoutException.Reason.UNREACHABLE);
                assertThat(e.getCause()).isInstanceOf(RedlockTransientException.class);
              });
      assertThat(cluster.holding(KEY)).isZero();
    }

    @Test
    void acquire_says_when_the_ttl_was_eaten_by_slow_nodes() {
      Cluster cluster = new Cluster(3);
      cluster.nodes.forEach(n -> n.acquireLatency(Duration.ofMillis(40)));

      assertThatThrownBy(
              () -> cluster.redlock().acquire(KEY, Duration.ofMillis(100), Duration.ZERO))
          .isInstanceOf(LockTimeoutException.class)
          .hasMessageContaining("acquired on 3 of 3 nodes")
          .hasMessageContaining("took 120 ms of the 100 ms TTL");
    }

    @Test
    void acquire_succeeds_once_the_holder_lets_go() throws InterruptedException {
      Cluster cluster = new Cluster(5);
      cluster.holdElsewhere(KEY, 0, 1, 2);
      cluster.onPause =
          pause -> {
            if (pause == 2) {
              for (int i = 0; i < 3; i++) {
                cluster.node(i).store.release(KEY, "another-client");
              }
            }
          };

      Lease lease = cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(5));

      assertThat(cluster.holding(KEY, lease.token())).isEqualTo(5);
      assertThat(cluster.acquireCalls()).isEqualTo(times(5, 3));
    }

    @Test
    void try_acquire_interrupted_while_pausing_returns_empty_with_the_flag_set() {
      Cluster cluster = new Cluster(5);
      cluster.holdElsewhere(KEY, 0, 1, 2);
      cluster.onPause =
          pause -> {
            throw new InterruptedException();
          };

      Optional<Lease> lease = cluster.redlock().tryAcquire(KEY, TTL);

      assertThat(Thread.interrupted()).isTrue();
      assertThat(lease).isEmpty();
      assertThat(cluster.acquireCalls()).isEqualTo(times(5, 1));
      assertThat(cluster.holding(KEY)).isEqualTo(3); // only the other client's keys
    }

    @Test
    void acquire_interrupted_while_pausing_throws_and_holds_nothing() {
      Cluster cluster = new Cluster(5);
      cluster.holdElsewhere(KEY, 0, 1, 2);
      cluster.onPause =
          pause -> {
            throw new InterruptedException();
          };

      assertThatThrownBy(() -> cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(5)))
          .isInstanceOf(InterruptedException.class);
      assertThat(cluster.holding(KEY)).isEqualTo(3);
    }

    @Test
    void an_interrupted_caller_does_not_start_an_attempt() throws Exception {
      Cluster cluster = new Cluster(3);
      QuorumRedlock redlock = cluster.redlock();

      Thread.currentThread().interrupt();
      assertThat(redlock.tryAcquire(KEY, TTL)).isEmpty();
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
      assertThatThrownBy(() -> redlock.acquire(KEY, TTL, Duration.ofSeconds(1)))
          .isInstanceOf(InterruptedException.class);

      assertThat(cluster.acquireCalls()).isEqualTo(times(3, 0));
    }

    @Test
    void acquire_interrupted_while_awaiting_throws_and_releases_what_it_took() {
      Cluster cluster = new Cluster(5);
      cluster.node(4).interrupting();

      assertThatThrownBy(() -> cluster.redlock().acquire(KEY, TTL, Duration.ofSeconds(5)))
          .isInstanceOf(InterruptedException.class);

      assertThat(Thread.currentThread().isInterrupted()).isFalse();
      cluster.node(4).deliverLate();
      assertThat(cluster.holding(KEY)).isZero();
      cluster.assertRepliesSettled();
    }

    private RandomGenerator extreme(boolean high) {
      return new RandomGenerator() {
        @Override
        public long nextLong() {
          throw new AssertionError("the engine should ask for a bounded value");
        }

        @Override
        public long nextLong(long bound) {
          return high ? bound - 1 : 0;
        }
      };
    }
  }

  @Nested
  @DisplayName("makes tokens")
  class Tokens {

    @Test
    void of_160_random_bits_in_url_safe_base64_without_padding() {
      String token = QuorumRedlock.newToken();

      assertThat(token).hasSize(27).matches("[A-Za-z0-9_-]+");
      assertThat(java.util.Base64.getUrlDecoder().decode(token)).hasSize(20);
    }

    @Test
    void that_never_repeat() {
      Set<String> tokens = new HashSet<>();
      IntStream.range(0, 10_000).forEach(i -> tokens.add(QuorumRedlock.newToken()));
      assertThat(tokens).hasSize(10_000);
    }

    @Test
    void fresh_for_every_lease() {
      Cluster cluster = new Cluster(3);
      QuorumRedlock redlock = cluster.redlock();
      Set<String> tokens = new HashSet<>();
      for (int i = 0; i < 200; i++) {
        try (Lease lease = redlock.tryAcquire(KEY, TTL).orElseThrow()) {
          tokens.add(lease.token());
        }
      }
      assertThat(tokens).hasSize(200);
    }
  }
}
