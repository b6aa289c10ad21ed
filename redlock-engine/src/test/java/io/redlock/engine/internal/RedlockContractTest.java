package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.RedlockSettings;
import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

@DisplayName("A Redlock")
class RedlockContractTest {
  private static final Duration TTL = Duration.ofSeconds(10);

  @Nested
  @DisplayName("rejects bad arguments with a message naming them")
  class BadArguments {

    static Stream<Arguments> badCalls() {
      QuorumRedlock r = new Cluster(3).redlock();
      Duration wait = Duration.ofSeconds(1);
      return Stream.of(
          bad("null resource", () -> r.tryAcquire(null, TTL), "resource must not be null"),
          bad("empty resource", () -> r.tryAcquire("", TTL), "resource must not be empty"),
          bad(
              "blank resource",
              () -> r.tryAcquire("  ", TTL),
              "resource must not be empty or blank"),
          bad("null ttl", () -> r.tryAcquire("k", null), "ttl must not be null"),
          bad("zero ttl", () -> r.tryAcquire("k", Duration.ZERO), "ttl must be positive"),
          bad("negative ttl", () -> r.tryAcquire("k", Duration.ofSeconds(-1)), "ttl must be"),
          bad(
              "ttl below the nodes' precision",
              () -> r.tryAcquire("k", Duration.ofNanos(500)),
              "below the TTL precision"),
          bad(
              "ttl eaten by the drift allowance",
              () -> r.tryAcquire("k", Duration.ofMillis(2)),
              "leaves no validity"),
          bad(
              "absurdly long ttl",
              () -> r.tryAcquire("k", Duration.ofDays(365L * 1_000)),
              "ttl PT8760000H is too long"),
          bad("null resource on acquire", () -> r.acquire(null, TTL, wait), "resource"),
          bad("null ttl on acquire", () -> r.acquire("k", null, wait), "ttl must not be null"),
          bad("null maxWait", () -> r.acquire("k", TTL, null), "maxWait must not be null"),
          bad(
              "negative maxWait",
              () -> r.acquire("k", TTL, Duration.ofMillis(-1)),
              "maxWait must not be negative"));
    }

    private static Arguments bad(String what, ThrowingCallable call, String message) {
      return Arguments.of(what, call, message);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badCalls")
    void and_touches_no_node(String what, ThrowingCallable call, String message) {
      assertThatThrownBy(call)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(message);
    }

    @Test
    void that_are_checked_before_any_node_is_asked() {
      Cluster cluster = new Cluster(3);
      QuorumRedlock redlock = cluster.redlock();

      assertThatThrownBy(() -> redlock.tryAcquire("", TTL))
          .isInstanceOf(IllegalArgumentException.class);
      assertThat(cluster.acquireCalls()).containsOnly(0);
    }

    @Test
    void and_says_which_ttl_would_work_when_the_drift_eats_it() {
      QuorumRedlock redlock =
          new Cluster(3).redlock(Cluster.SETTINGS.withMinValidity(Duration.ofMillis(100)));

      assertThatThrownBy(() -> redlock.tryAcquire("k", Duration.ofMillis(100)))
          .hasMessageContaining("driftBuffer 2 ms")
          .hasMessageContaining("minimum validity (100 ms)")
          .hasMessageContaining("well above 104 ms");
      assertThat(redlock.tryAcquire("k", Duration.ofMillis(200))).isPresent();
    }

    @Test
    void and_refuses_the_same_node_twice() {
      Cluster cluster = new Cluster(2);
      FaultyNode twin = new FaultyNode("node-0", cluster.ticker, cluster.events);
      List<LockNode> sameInstance = List.of(cluster.node(0), cluster.node(1), cluster.node(0));
      List<LockNode> sameName = List.of(cluster.node(0), cluster.node(1), twin);

      for (List<LockNode> nodes : List.of(sameInstance, sameName)) {
        assertThatThrownBy(() -> new QuorumRedlock(nodes, RedlockSettings.defaults(), () -> 0L))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("'node-0' is listed twice");
      }
      // the caller keeps its nodes: the builder closes only what it opened itself
      assertThat(cluster.node(0).closeCalls.get()).isZero();
    }
  }

  @Nested
  @DisplayName("describes itself")
  class Description {

    @Test
    void with_its_node_names_quorum_and_settings() {
      Cluster cluster = new Cluster(4);
      QuorumRedlock redlock = cluster.redlock();

      assertThat(redlock.nodes()).containsExactly("node-0", "node-1", "node-2", "node-3");
      assertThat(redlock.quorum()).isEqualTo(3);
      assertThat(redlock.settings()).isEqualTo(Cluster.SETTINGS);
      assertThat(redlock).hasToString("Redlock[node-0, node-1, node-2, node-3] quorum 3");
    }

    @Test
    void with_node_names_redacted() {
      Cluster cluster = new Cluster(0);
      FaultyNode leaky =
          new FaultyNode("redis://user:hunter2@db:6379", cluster.ticker, cluster.events);

      QuorumRedlock redlock =
          new QuorumRedlock(List.of(leaky), RedlockSettings.defaults(), cluster.ticker);

      assertThat(redlock.nodes()).containsExactly("redis://user:***@db:6379");
      assertThat(redlock.toString()).doesNotContain("hunter2");
    }

    @Test
    void with_a_lease_that_does_not_print_its_token() {
      Lease lease = new Cluster(3).redlock().tryAcquire("invoice-42", TTL).orElseThrow();

      assertThat(lease.toString()).contains("invoice-42").doesNotContain(lease.token());
    }
  }

  @Nested
  @DisplayName("closes")
  class Closing {

    @Test
    void every_node_even_when_one_fails_to_close() {
      Cluster cluster = new Cluster(3);
      cluster.node(0).failOnClose(new IllegalStateException("socket already gone"));
      QuorumRedlock redlock = cluster.redlock();

      redlock.close();

      for (FaultyNode node : cluster.nodes) {
        assertThat(node.closeCalls.get()).isEqualTo(1);
      }
    }

    @Test
    void once() {
      Cluster cluster = new Cluster(3);
      QuorumRedlock redlock = cluster.redlock();

      redlock.close();
      redlock.close();

      for (FaultyNode node : cluster.nodes) {
        assertThat(node.closeCalls.get()).isEqualTo(1);
      }
    }

    @Test
    void and_then_refuses_new_locks() {
      Cluster cluster = new Cluster(3);
      QuorumRedlock redlock = cluster.redlock();
      redlock.close();

      assertThatThrownBy(() -> redlock.tryAcquire("k", TTL))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("closed");
      assertThatThrownBy(() -> redlock.acquire("k", TTL, Duration.ZERO))
          .isInstanceOf(IllegalStateException.class);
    }
  }

  @Nested
  @DisplayName("runs work under a lease")
  class WithLease {

    @Test
    void and_releases_it_afterwards() {
      Cluster cluster = new Cluster(3);
      QuorumRedlock redlock = cluster.redlock();

      String token = redlock.withLease("job", TTL, lease -> lease.token());

      assertThat(token).isNotEmpty();
      assertThat(cluster.holding("job")).isZero();
    }

    @Test
    void or_throws_a_lock_timeout_when_the_resource_is_held() {
      Cluster cluster = new Cluster(3);
      cluster.holdElsewhere("job", 0, 1);

      assertThatThrownBy(
              () -> cluster.redlock().withLease("job", TTL, Duration.ofMillis(100), l -> 1))
          .isInstanceOf(LockTimeoutException.class)
          .hasMessageContaining("held by another client");
    }
  }
}
