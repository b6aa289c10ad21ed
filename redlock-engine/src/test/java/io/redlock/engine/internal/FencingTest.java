package io.redlock.engine.internal;

import static io.redlock.engine.internal.Cluster.times;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.Redlock;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockSettings;
import io.redlock.engine.internal.FaultyNode.Mode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Fencing tokens")
class FencingTest {
  private static final String KEY = "invoice-42";
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration ONE_SECOND = Duration.ofSeconds(1);

  /** Drift for a 1 s TTL with the default settings: 1 s x 0.01 + 2 ms. */
  /** The drift allowance of a 1 s TTL (10 + 2 ms), and the nodes' 1 ms TTL precision. */
  private static final Duration DRIFT_1S = Duration.ofMillis(13);

  private static final RedlockSettings FENCING =
      Cluster.SETTINGS.withFencing(true).withRetry(1, Duration.ZERO, Duration.ZERO);

  @Test
  @DisplayName("are off by default: no fenced call is made and the lease has no token")
  void offByDefault() {
    Cluster cluster = new Cluster(3);

    Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

    assertThatThrownBy(lease::fencingToken)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("fencing(true)");
    assertThat(cluster.calls(n -> n.fencedCalls.get())).isEqualTo(times(3, 0));
    assertThat(cluster.calls(n -> n.raiseCalls.get())).isEqualTo(times(3, 0));
    assertThat(cluster.calls(n -> n.statusCalls.get())).isEqualTo(times(3, 0));
  }

  @Test
  @DisplayName("need every node to keep counters: build() names each node that does not")
  void buildNamesNodesWithoutCounters() {
    Cluster cluster = new Cluster(5);
    cluster.node(1).withoutFencing();
    cluster.node(3).withoutFencing();

    assertThatThrownBy(() -> cluster.redlock(FENCING))
        .isInstanceOf(RedlockNonTransientException.class)
        .hasMessageContaining("fencing is on")
        .hasMessageContaining("node-1, node-3")
        .hasMessageNotContaining("node-0");
    assertThatThrownBy(
            () ->
                Redlock.builder()
                    .nodes(List.copyOf(cluster.nodes))
                    .ticker(cluster.ticker)
                    .fencing(true)
                    .build())
        .as("through the public builder")
        .isInstanceOf(RedlockNonTransientException.class)
        .hasMessageContaining("node-1, node-3");
  }

  @Test
  @DisplayName("are the maximum of the granting nodes' counters, written back to each of them")
  void maximumWrittenBack() {
    Cluster cluster = new Cluster(5);
    cluster.node(0).store.setFence(KEY, 10);
    cluster.node(3).down();
    cluster.node(4).down();

    Lease lease = cluster.redlock(FENCING).tryAcquire(KEY, TTL).orElseThrow();

    assertThat(lease.fencingToken()).isEqualTo(11);
    for (int i = 0; i < 3; i++) {
      assertThat(cluster.node(i).store.fence(KEY)).as("node-%d's counter", i).hasValue(11);
    }
    assertThat(cluster.node(3).store.fence(KEY)).isEmpty();
    assertThat(cluster.calls(n -> n.raiseCalls.get())).isEqualTo(List.of(1, 1, 1, 0, 0));
    cluster.assertRepliesSettled();
  }

  @Test
  @DisplayName("increase from {A,B,C} to {C,D,E} although D and E never saw A's counter")
  void abcThenCde() {
    Cluster cluster = new Cluster(5);
    QuorumRedlock redlock = cluster.redlock(FENCING);
    cluster.node(0).store.setFence(KEY, 10);
    cluster.node(3).down();
    cluster.node(4).down();
    Lease first = redlock.tryAcquire(KEY, TTL).orElseThrow();
    first.release();
    cluster.node(3).up();
    cluster.node(4).up();
    cluster.node(0).down();
    cluster.node(1).down();

    Lease second = redlock.tryAcquire(KEY, TTL).orElseThrow();

    assertThat(first.fencingToken()).isEqualTo(11);
    // D and E count 1 on their own; C carries 11 from the write-back.
    assertThat(second.fencingToken()).isEqualTo(12).isGreaterThan(first.fencingToken());
    assertThat(cluster.node(4).store.fence(KEY)).hasValue(12);
  }

  @Test
  @DisplayName("need a majority to confirm the write-back, else the attempt fails and is released")
  void writeBackMajorityNeeded() throws Exception {
    Cluster cluster = new Cluster(5);
    cluster.node(0).raiseMode(Mode.DOWN);
    cluster.node(1).raiseMode(Mode.DOWN);
    cluster.node(2).raiseMode(Mode.DOWN);
    QuorumRedlock redlock = cluster.redlock(FENCING);

    assertThat(redlock.tryAcquire(KEY, TTL)).isEmpty();
    assertThat(cluster.holding(KEY)).isZero();
    assertThatThrownBy(() -> redlock.acquire(KEY, TTL, Duration.ZERO))
        .isInstanceOfSatisfying(
            LockTimeoutException.class,
            e ->
                assertThat(e.reason()).isEqualTo(LockTimeoutException.Reason.FENCING_NOT_CONFIRMED))
        .hasMessageContaining("acquired on 5 of 5 nodes, but only 2 confirmed the fencing token");
    cluster.assertRepliesSettled();

    cluster.node(2).raiseMode(Mode.UP);
    assertThat(redlock.tryAcquire(KEY, TTL)).as("with 3 confirmations").isPresent();
  }

  @Test
  @DisplayName("do not count a write-back confirmed after the deadline")
  void lateWriteBackDoesNotCount() {
    Cluster cluster = new Cluster(3);
    cluster.node(0).raiseMode(Mode.SLOW_ANSWER);
    cluster.node(1).raiseMode(Mode.SLOW_ANSWER);

    Optional<Lease> lease = cluster.redlock(FENCING).tryAcquire(KEY, TTL);

    assertThat(lease).isEmpty();
    assertThat(cluster.holding(KEY)).isZero();
    cluster.node(0).deliverLate();
    cluster.node(1).deliverLate();
    cluster.assertRepliesSettled();
  }

  @Test
  @DisplayName("count the write-back round in the validity")
  void validityIncludesWriteBack() {
    Cluster cluster = new Cluster(5);
    for (FaultyNode node : cluster.nodes) {
      node.raiseLatency(Duration.ofMillis(100)); // five calls: 500 ms of the fake clock
    }

    Lease lease = cluster.redlock(FENCING).tryAcquire(KEY, ONE_SECOND).orElseThrow();

    assertThat(lease.remainingValidity()).isEqualTo(ONE_SECOND.minus(DRIFT_1S).minusMillis(500));
  }

  @Test
  @DisplayName("fail, and release, when the write-back uses up the validity")
  void writeBackPastValidityFails() throws Exception {
    Cluster cluster = new Cluster(5);
    for (FaultyNode node : cluster.nodes) {
      node.raiseLatency(Duration.ofMillis(250)); // 1250 ms of a 1 s TTL
    }
    QuorumRedlock redlock = cluster.redlock(FENCING);

    assertThatThrownBy(() -> redlock.acquire(KEY, ONE_SECOND, Duration.ZERO))
        .isInstanceOfSatisfying(
            LockTimeoutException.class,
            e -> assertThat(e.reason()).isEqualTo(LockTimeoutException.Reason.TOO_SLOW))
        .hasMessageContaining("the acquisition took 1250 ms of the 1000 ms TTL");
    assertThat(cluster.holding(KEY)).isZero();
  }

  @Test
  @DisplayName("strictly increase over random majorities, failures and restarts")
  void increaseOverRandomMajorities() {
    Cluster cluster = new Cluster(5);
    QuorumRedlock redlock = cluster.redlock(FENCING);
    Random random = new Random(7);
    List<Long> tokens = new ArrayList<>();
    for (int round = 0; round < 300; round++) {
      for (FaultyNode node : cluster.nodes) {
        node.up();
      }
      int down = random.nextInt(3); // 0, 1 or 2 of 5: a majority is always up
      for (int d = 0; d < down; d++) {
        cluster.node(random.nextInt(5)).down();
      }
      if (random.nextInt(20) == 0) {
        cluster.node(random.nextInt(5)).store.restart(); // forgets its counters
      }
      Lease lease = redlock.tryAcquire(KEY, TTL).orElseThrow();
      tokens.add(lease.fencingToken());
      if (random.nextBoolean()) {
        lease.release();
      } else {
        cluster.ticker.advance(TTL); // let it expire instead
      }
    }
    for (int i = 1; i < tokens.size(); i++) {
      assertThat(tokens.get(i))
          .as("token %d (token %d was %d)", i, i - 1, tokens.get(i - 1))
          .isGreaterThan(tokens.get(i - 1));
    }
    cluster.assertRepliesSettled();
  }

  @Test
  @DisplayName("stay with the lease through extension and after release, and show in toString")
  void tokenIsStable() {
    Cluster cluster = new Cluster(3);
    Lease lease = cluster.redlock(FENCING).tryAcquire(KEY, TTL).orElseThrow();
    long token = lease.fencingToken();

    assertThat(lease.extend(TTL)).isTrue();
    assertThat(lease.fencingToken()).isEqualTo(token);
    assertThat(lease.toString()).contains("fencing token " + token);
    lease.release();
    assertThat(lease.fencingToken()).isEqualTo(token);
  }
}
