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
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("The doctor's probe of one node")
class NodeProbeTest {
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration TIMEOUT = Duration.ofSeconds(5);

  /** The reference node, optionally declaring a status report, optionally refusing every call. */
  private static class Node implements LockNode {
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
    assertThat(r.readsClock()).isFalse();
    assertThat(r.clockOffsetMs()).isNull();
    assertThat(r.clockOffsetUncertaintyMs()).isNull();
    assertThat(r.clockNote()).contains("does not read the store's clock");
    assertThat(DoctorCommand.clockText(r)).isEqualTo("n/a");
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

  @Test
  @DisplayName(
      "measures a store clock 30 s ahead NTP-style: the offset within its uncertainty, signed")
  void clockOffsetAhead() {
    InMemoryLockNode ahead =
        new InMemoryLockNode(
            "mem://ahead",
            io.redlock.Ticker.system(),
            false,
            Clock.offset(Clock.systemUTC(), Duration.ofSeconds(30)));

    NodeReport r = NodeProbe.probe("mem://ahead", ahead, 1.0, TTL, 5, TIMEOUT);

    assertThat(r.readsClock()).isTrue();
    assertThat(r.clockError()).isNull();
    assertThat(r.clockNote()).isNull();
    assertThat(r.clockOffsetUncertaintyMs()).isNotNegative().isLessThan(1_000.0);
    // The in-memory store answers at once: its true offset is 30 s, give or take the uncertainty
    // and the resolution of the two wall clocks (this JVM's, 1 µs).
    assertThat(r.clockOffsetMs())
        .isBetween(
            30_000.0 - r.clockOffsetUncertaintyMs() - 1,
            30_000.0 + r.clockOffsetUncertaintyMs() + 1);
    assertThat(DoctorCommand.clockText(r)).startsWith("+30.00 s ±");
  }

  @Test
  @DisplayName("a store clock behind this machine's has a negative offset")
  void clockOffsetBehind() {
    InMemoryLockNode behind =
        new InMemoryLockNode(
            "mem://behind",
            io.redlock.Ticker.system(),
            false,
            Clock.offset(Clock.systemUTC(), Duration.ofMillis(-1500)));

    NodeReport r = NodeProbe.probe("mem://behind", behind, 1.0, TTL, 1, TIMEOUT);

    assertThat(r.clockOffsetMs()).isBetween(-1_600.0, -1_400.0);
    assertThat(DoctorCommand.clockText(r)).startsWith("-1.50 s ±");
  }

  @Test
  @DisplayName("reads the clock at least 3 times, and the fastest read decides")
  void clockReadsFastest() {
    java.util.concurrent.atomic.AtomicInteger reads =
        new java.util.concurrent.atomic.AtomicInteger();
    InMemoryLockNode store = new InMemoryLockNode("mem://count");
    LockNode counting =
        new Node(null, false) {
          @Override
          public NodeCapabilities capabilities() {
            return super.capabilities().withClock();
          }

          @Override
          public Reply<java.time.Instant> serverTime() {
            int n = reads.incrementAndGet();
            if (n == 1) {
              // a slow first read with a wrong answer: it must not be the one kept
              try {
                Thread.sleep(50);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              return Reply.of(java.time.Instant.now().plusSeconds(60));
            }
            return store.serverTime();
          }
        };

    NodeReport r = NodeProbe.probe("mem://count", counting, 1.0, TTL, 1, TIMEOUT);

    assertThat(reads.get()).isEqualTo(NodeProbe.MIN_CLOCK_READS);
    assertThat(r.clockOffsetMs()).isBetween(-50.0, 50.0);
  }

  @Test
  @DisplayName("a store in this process is reported as this machine's own clock")
  void localStore() {
    assertThat(NodeProbe.localClock("jdbc:sqlite:/tmp/x.db?redlock.createTable=true"))
        .contains("this machine's own clock");
    assertThat(NodeProbe.localClock("jdbc:h2:mem:x")).contains("this machine's own clock");
    assertThat(NodeProbe.localClock("jdbc:h2:tcp://db/x")).isNull();
    assertThat(NodeProbe.localClock("redis://127.0.0.1:6379")).isNull();
  }

  @Test
  @DisplayName("a failing clock read is reported as such, without failing the probe")
  void clockReadFails() {
    LockNode failing =
        new Node(null, false) {
          @Override
          public NodeCapabilities capabilities() {
            return super.capabilities().withClock();
          }

          @Override
          public Reply<java.time.Instant> serverTime() {
            return Reply.failed(new RedlockTransientException(name(), "TIME refused", null));
          }
        };

    NodeReport r = NodeProbe.probe("mem://probe", failing, 1.0, TTL, 1, TIMEOUT);

    assertThat(r.reachable()).isTrue();
    assertThat(r.error()).isNull();
    assertThat(r.clockOffsetMs()).isNull();
    assertThat(r.clockError()).isEqualTo("TIME refused");
    assertThat(DoctorCommand.clockText(r)).isEqualTo("failed");
  }
}
