package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.ReleaseOutcome;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Lease.releaseAwaitingLate")
class ReleaseAwaitingLateTest {
  private static final String KEY = "invoice-42";
  private static final Duration TTL = Duration.ofSeconds(10);

  /** A Redlock whose nodes have all answered once, then with {@code slow} nodes slow. */
  private static QuorumRedlock answeredOnce(Cluster cluster, int... slow) {
    QuorumRedlock redlock = cluster.redlock();
    redlock.tryAcquire("warm-up", TTL).orElseThrow().release();
    for (int i : slow) {
      cluster.node(i).slow();
    }
    return redlock;
  }

  @Test
  @DisplayName("waits for late grants and cut-short releases, then leaves no key behind")
  void lateGrantsAreReleased() {
    Cluster cluster = new Cluster(5);
    Lease lease = answeredOnce(cluster, 3, 4).tryAcquire(KEY, TTL).orElseThrow();
    Thread recovery =
        new Thread(
            () -> {
              sleep(200);
              cluster.node(3).deliverLate(); // the acquire lands and grants, then the release
              cluster.node(4).deliverLate();
            });
    recovery.start();

    ReleaseOutcome outcome = lease.releaseAwaitingLate(Duration.ofSeconds(10));

    assertThat(outcome.complete()).isTrue();
    assertThat(outcome.failedNodes()).isEmpty();
    assertThat(outcome.answered()).isEqualTo(5);
    assertThat(cluster.holding(KEY)).isZero();
    cluster.assertRepliesSettled();
  }

  @Test
  @DisplayName("a plain release reports the slow nodes as not answered")
  void plainReleaseDoesNotWait() {
    Cluster cluster = new Cluster(5);
    cluster.node(3).slow();
    Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

    ReleaseOutcome outcome = lease.release();

    assertThat(outcome.failedNodes()).containsExactly("node-3");
    cluster.node(3).deliverLate();
  }

  @Test
  @DisplayName("gives up after the bound on nodes whose late calls do not end")
  void boundedWait() {
    Cluster cluster = new Cluster(5);
    Lease lease = answeredOnce(cluster, 3, 4).tryAcquire(KEY, TTL).orElseThrow();

    long start = System.nanoTime();
    ReleaseOutcome outcome = lease.releaseAwaitingLate(Duration.ofMillis(200));
    long tookMillis = (System.nanoTime() - start) / 1_000_000;

    assertThat(tookMillis).isBetween(150L, 5_000L);
    assertThat(outcome.complete()).isFalse();
    assertThat(outcome.failedNodes()).containsExactly("node-3", "node-4");
    assertThat(outcome.answered()).isEqualTo(3);
    cluster.node(3).deliverLate();
    cluster.node(4).deliverLate();
  }

  @Test
  @DisplayName("does not wait for a node that never answered, and reports it")
  void neverAnswered() {
    Cluster cluster = new Cluster(5);
    cluster.node(4).slow();
    Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

    long start = System.nanoTime();
    ReleaseOutcome outcome = lease.releaseAwaitingLate(Duration.ofSeconds(10));

    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    assertThat(outcome.failedNodes()).containsExactly("node-4");
    cluster.node(4).deliverLate();
  }

  @Test
  @DisplayName("with every node answering, is a plain release: no call is sent twice")
  void nothingLate() {
    Cluster cluster = new Cluster(3);
    Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();

    ReleaseOutcome outcome = lease.releaseAwaitingLate(Duration.ofSeconds(10));

    assertThat(outcome.complete()).isTrue();
    assertThat(outcome.deleted()).isEqualTo(3);
    assertThat(cluster.releaseCalls()).isEqualTo(List.of(1, 1, 1));
    assertThat(lease.releaseAwaitingLate(Duration.ZERO)).isEqualTo(outcome);
  }

  @Test
  @DisplayName("refuses a missing or negative bound with the fix")
  void badBound() {
    Cluster cluster = new Cluster(3);
    Lease lease = cluster.redlock().tryAcquire(KEY, TTL).orElseThrow();
    assertThatThrownBy(() -> lease.releaseAwaitingLate(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxWait must be zero or positive");
    assertThatThrownBy(() -> lease.releaseAwaitingLate(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("e.g. Duration.ofSeconds(2)");
    lease.release();
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
