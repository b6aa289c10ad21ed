package io.redlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.RedlockTransientException;
import io.redlock.cli.internal.NodeProbe.NodeReport;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("The doctor's probe of one node")
class NodeProbeTest {
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration TIMEOUT = Duration.ofSeconds(5);

  /** The reference node, optionally declaring a status report, optionally refusing every call. */
  private static final class Node implements LockNode {
    final InMemoryLockNode delegate = new InMemoryLockNode("mem://probe");
    final NodeStatus status;
    final boolean down;

    Node(NodeStatus status, boolean down) {
      this.status = status;
      this.down = down;
    }

    @Override
    public String name() {
      return delegate.name();
    }

    @Override
    public NodeCapabilities capabilities() {
      // Declares a status only when it has one to report, fencing never.
      NodeCapabilities c = new NodeCapabilities(delegate.capabilities().ttlPrecision());
      return status == null ? c : c.withStatus();
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      return down
          ? Reply.failed(new RedlockTransientException(name(), "connection refused", null))
          : delegate.tryAcquire(key, token, ttl);
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return delegate.release(key, token);
    }

    @Override
    public Reply<Boolean> extend(String key, String token, Duration ttl) {
      return delegate.extend(key, token, ttl);
    }

    @Override
    public Reply<NodeStatus> status() {
      return Reply.of(status);
    }

    @Override
    public void close() {
      delegate.close();
    }
  }

  @Test
  @DisplayName("times every call of every probe and leaves no key behind")
  void measures() {
    Node node = new Node(null, false);

    NodeReport r = NodeProbe.probe("mem://probe", node, 1.0, TTL, 4, TIMEOUT);

    assertThat(r.reachable()).isTrue();
    assertThat(r.error()).isNull();
    assertThat(r.roundTrips()).isEqualTo(12);
    assertThat(r.rttMedianMs()).isNotNull().isLessThanOrEqualTo(r.rttWorstMs());
    assertThat(r.anomalies()).isEmpty();
    assertThat(node.delegate.heldKeys()).isZero();
  }

  @Test
  @DisplayName("reports nothing it was not told: no status means null version, uptime, durability")
  void noStatusNoInventions() {
    NodeReport r = NodeProbe.probe("mem://probe", new Node(null, false), 1.0, TTL, 1, TIMEOUT);

    assertThat(r.reportsStatus()).isFalse();
    assertThat(r.fencing()).isFalse();
    assertThat(r.serverVersion()).isNull();
    assertThat(r.incarnation()).isNull();
    assertThat(r.uptimeSeconds()).isNull();
    assertThat(r.durable()).isNull();
    assertThat(r.details()).isNull();
    assertThat(r.clockOffset()).isNull();
  }

  @Test
  @DisplayName("shows the status a node declares and reports")
  void status() {
    NodeStatus status =
        new NodeStatus("run-42", Duration.ofSeconds(90), false, Map.of("version", "7.0.15"));

    NodeReport r = NodeProbe.probe("mem://probe", new Node(status, false), 1.0, TTL, 1, TIMEOUT);

    assertThat(r.reportsStatus()).isTrue();
    assertThat(r.serverVersion()).isEqualTo("7.0.15");
    assertThat(r.uptimeSeconds()).isEqualTo(90.0);
    assertThat(r.durable()).isFalse();
    assertThat(r.incarnation()).isEqualTo("run-42");
    assertThat(r.details()).containsEntry("version", "7.0.15");
  }

  @Test
  @DisplayName(
      "a node whose first call fails is unreachable, with the reason and without its name twice")
  void unreachable() {
    NodeReport r = NodeProbe.probe("mem://probe", new Node(null, true), 1.0, TTL, 3, TIMEOUT);

    assertThat(r.reachable()).isFalse();
    assertThat(r.error()).isEqualTo("connection refused");
    assertThat(r.rttMedianMs()).isNull();
  }
}
