package io.redlock.engine.internal;

import static io.redlock.engine.internal.Cluster.times;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockSettings;
import io.redlock.engine.internal.FaultyNode.Mode;
import io.redlock.spi.NodeStatus;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Restart quarantine")
class QuarantineTest {
  private static final String KEY = "invoice-42";
  private static final Duration MAX_TTL = Duration.ofSeconds(10);

  /** How long a non-durable node must have been up: the maximum TTL plus its drift allowance. */
  private static final Duration QUARANTINE = MAX_TTL.plusMillis(102);

  private static final RedlockSettings QUARANTINE_ON =
      Cluster.SETTINGS.withRestartQuarantine(MAX_TTL).withRetry(1, Duration.ZERO, Duration.ZERO);

  /** A cluster whose nodes have been up long enough, and a Redlock that has seen them. */
  private static Cluster settled(int n) {
    Cluster cluster = new Cluster(n);
    cluster.ticker.advance(QUARANTINE.multipliedBy(2));
    return cluster;
  }

  @Test
  @DisplayName(
      "does not count the votes of non-durable nodes that are younger than the maximum TTL")
  void youngNodesDoNotVote() {
    Cluster cluster = new Cluster(3); // just started
    QuorumRedlock redlock = cluster.redlock(QUARANTINE_ON);

    assertThat(redlock.tryAcquire(KEY, MAX_TTL)).isEmpty();
    assertThat(cluster.holding(KEY)).as("keys released after the failed attempt").isZero();
    assertThatThrownBy(() -> redlock.acquire(KEY, MAX_TTL, Duration.ZERO))
        .isInstanceOfSatisfying(
            LockTimeoutException.class,
            e -> assertThat(e.reason()).isEqualTo(LockTimeoutException.Reason.RESTART_QUARANTINE))
        .hasMessageContaining("acquired on 3 of 3 nodes, but only 0 votes count")
        .hasMessageContaining("restart quarantine leaves out node-0")
        .hasMessageContaining("up 0 ms of the 10102 ms quarantine");
    cluster.assertRepliesSettled();
  }

  @Test
  @DisplayName("counts them once they have been up for the maximum TTL plus the drift allowance")
  void votesCountAfterQuarantine() {
    Cluster cluster = new Cluster(3);
    QuorumRedlock redlock = cluster.redlock(QUARANTINE_ON);

    cluster.ticker.advance(QUARANTINE.minusMillis(1));
    assertThat(redlock.tryAcquire(KEY, MAX_TTL)).as("1 ms too early").isEmpty();
    cluster.ticker.advance(Duration.ofMillis(1));
    Lease lease = redlock.tryAcquire(KEY, MAX_TTL).orElseThrow();

    assertThat(lease.quarantinedNodes()).isEmpty();
  }

  @Test
  @DisplayName("counts durable nodes at once")
  void durableNodesVoteAtOnce() {
    Cluster cluster = new Cluster(3, true);

    Lease lease = cluster.redlock(QUARANTINE_ON).tryAcquire(KEY, MAX_TTL).orElseThrow();

    assertThat(lease.quarantinedNodes()).isEmpty();
    assertThat(cluster.calls(n -> n.statusCalls.get())).isEqualTo(times(3, 1));
  }

  @Test
  @DisplayName("reads each node's status after awaiting its vote")
  void statusAfterVote() {
    Cluster cluster = settled(3);

    cluster.redlock(QUARANTINE_ON).tryAcquire(KEY, MAX_TTL).orElseThrow();

    List<String> events = List.copyOf(cluster.events);
    for (int i = 0; i < 3; i++) {
      assertThat(events.indexOf("start status node-" + i))
          .as("status of node-%d asked after its vote was awaited", i)
          .isGreaterThan(events.indexOf("await tryAcquire node-" + i));
    }
  }

  @Test
  @DisplayName("lists a quarantined node in the lease that a majority of the others granted")
  void quarantinedNodeIsListed() {
    Cluster cluster = settled(5);
    cluster.node(2).store.restart();

    Lease lease = cluster.redlock(QUARANTINE_ON).tryAcquire(KEY, MAX_TTL).orElseThrow();

    assertThat(lease.quarantinedNodes()).containsExactly("node-2");
    assertThat(cluster.holding(KEY, lease.token())).isEqualTo(5);
    assertThat(lease.toString()).contains("quarantined (not counted): [node-2]");
  }

  @Test
  @DisplayName("notices a restart between two acquisitions and keeps the node out from then on")
  void restartBetweenAcquisitions() {
    Cluster cluster = settled(3);
    QuorumRedlock redlock = cluster.redlock(QUARANTINE_ON);
    redlock.tryAcquire(KEY, MAX_TTL).orElseThrow().release();

    cluster.node(0).store.restart();
    cluster.node(1).store.restart();
    cluster.ticker.advance(Duration.ofSeconds(1));

    assertThatThrownBy(() -> redlock.acquire(KEY, MAX_TTL, Duration.ZERO))
        .isInstanceOf(LockTimeoutException.class)
        .hasMessageContaining("only 1 votes count")
        .hasMessageContaining("node-0 (restarted without durable lock state, up 1000 ms");
    cluster.ticker.advance(QUARANTINE.minusSeconds(1));
    assertThat(redlock.tryAcquire(KEY, MAX_TTL)).as("after the quarantine").isPresent();
  }

  @Test
  @DisplayName("keeps a restarted node out even if it reports a long uptime")
  void restartWithImplausibleUptime() {
    Cluster cluster = settled(3);
    QuorumRedlock redlock = cluster.redlock(QUARANTINE_ON);
    redlock.tryAcquire(KEY, MAX_TTL).orElseThrow().release();

    // New incarnations that claim a day of uptime: the engine saw the old ones a moment ago.
    cluster.node(0).reportStatus(new NodeStatus("liar-0", Duration.ofDays(1), false, Map.of()));
    cluster.node(1).reportStatus(new NodeStatus("liar-1", Duration.ofDays(1), false, Map.of()));
    cluster.ticker.advance(Duration.ofSeconds(1));

    assertThat(redlock.tryAcquire(KEY, MAX_TTL)).isEmpty();
    cluster.ticker.advance(QUARANTINE.minusSeconds(1));
    assertThat(redlock.tryAcquire(KEY, MAX_TTL)).isPresent();
  }

  @Test
  @DisplayName("does not count a node whose status cannot be read")
  void unreadableStatus() {
    Cluster cluster = settled(3);
    QuorumRedlock redlock = cluster.redlock(QUARANTINE_ON);
    cluster.node(0).statusMode(Mode.DOWN);

    Lease lease = redlock.tryAcquire(KEY, MAX_TTL).orElseThrow();
    assertThat(lease.quarantinedNodes()).containsExactly("node-0");
    lease.release();

    cluster.node(1).statusMode(Mode.SLOW_ANSWER);
    assertThatThrownBy(() -> redlock.acquire(KEY, MAX_TTL, Duration.ZERO))
        .isInstanceOf(LockTimeoutException.class)
        .hasMessageContaining("node-0 (its status could not be read");
    cluster.node(1).deliverLate();
    cluster.assertRepliesSettled();
  }

  @Test
  @DisplayName("judges extensions the same way")
  void extensionsAreJudged() {
    Cluster cluster = settled(3);
    Lease lease = cluster.redlock(QUARANTINE_ON).tryAcquire(KEY, MAX_TTL).orElseThrow();

    cluster.node(0).reportStatus(new NodeStatus("new-0", Duration.ZERO, false, Map.of()));
    assertThat(lease.extend(MAX_TTL)).as("with one young node of three").isTrue();
    cluster.node(1).reportStatus(new NodeStatus("new-1", Duration.ZERO, false, Map.of()));
    assertThat(lease.extend(MAX_TTL)).as("with two young nodes of three").isFalse();
  }

  @Test
  @DisplayName("refuses a TTL longer than its maximum TTL, for acquire and extend")
  void ttlAboveMaximumRefused() {
    Cluster cluster = settled(3);
    QuorumRedlock redlock = cluster.redlock(QUARANTINE_ON);

    assertThatThrownBy(() -> redlock.tryAcquire(KEY, MAX_TTL.plusMillis(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("longer than the maximum TTL of restart quarantine (10000 ms)");
    Lease lease = redlock.tryAcquire(KEY, MAX_TTL).orElseThrow();
    assertThatThrownBy(() -> lease.extend(MAX_TTL.multipliedBy(2)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("restartQuarantine");
  }

  @Test
  @DisplayName("needs every node to report a status: build() names each node that does not")
  void buildNamesNodesWithoutStatus() {
    Cluster cluster = new Cluster(3);
    cluster.node(2).withoutStatus();

    assertThatThrownBy(() -> cluster.redlock(QUARANTINE_ON))
        .isInstanceOf(RedlockNonTransientException.class)
        .hasMessageContaining("restart quarantine is on")
        .hasMessageContaining("node-2")
        .hasMessageNotContaining("node-0");
  }

  @Test
  @DisplayName("when off (the default), lets young nodes vote and reads no status")
  void offByDefault() {
    Cluster cluster = new Cluster(3);
    cluster.node(0).store.restart();

    Lease lease =
        cluster
            .redlock(Cluster.SETTINGS.withRetry(1, Duration.ZERO, Duration.ZERO))
            .tryAcquire(KEY, MAX_TTL.multipliedBy(10))
            .orElseThrow();

    assertThat(lease.quarantinedNodes()).isEmpty();
    assertThat(cluster.calls(n -> n.statusCalls.get())).isEqualTo(times(3, 0));
    assertThat(RedlockSettings.defaults().restartQuarantine()).isNull();
    assertThat(RedlockSettings.defaults().fencing()).isFalse();
  }
}
