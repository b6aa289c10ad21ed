package io.redlock.engine.internal;

import io.redlock.NodeReport;
import io.redlock.RedlockSettings;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * {@link io.redlock.Redlock#probe}: every node probed on a thread of its own, all against one
 * deadline, each call through the {@link FanOut} (so that it counts in the nodes' health) and
 * awaited even if the node is down. Each node's calls run one after the other, so that each round
 * trip is the node's own, not the time its answer waited for another node's.
 */
final class Probe {
  /** Clock reads per node at most, whatever the rounds. */
  static final int MAX_CLOCK_READS = 20;

  /** The probe keys' TTL (or twice the node's TTL precision, if longer). */
  private static final Duration KEY_TTL = Duration.ofSeconds(10);

  /** How long past the deadline the threads get to hand in their reports. */
  private static final long GRACE_NANOS = 200_000_000L;

  private final Quorum quorum;
  private final RedlockSettings settings;
  private final int rounds;
  private final Duration timeout;
  private final long deadline;

  private Probe(Quorum quorum, RedlockSettings settings, int rounds, Duration timeout) {
    this.quorum = quorum;
    this.settings = settings;
    this.rounds = rounds;
    this.timeout = timeout;
    this.deadline = quorum.ticker.read() + Timing.saturatedNanos(timeout);
  }

  static List<NodeReport> run(
      Quorum quorum, RedlockSettings settings, int rounds, Duration timeout) {
    if (rounds < 1) {
      throw new IllegalArgumentException("rounds must be at least 1, got " + rounds);
    }
    if (timeout == null || timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException(
          "timeout must be positive, got " + timeout + "; pass e.g. Duration.ofSeconds(2)");
    }
    return new Probe(quorum, settings, rounds, timeout).all();
  }

  private List<NodeReport> all() {
    int n = quorum.size();
    AtomicReferenceArray<NodeReport> reports = new AtomicReferenceArray<>(n);
    CountDownLatch done = new CountDownLatch(n);
    Thread[] threads = new Thread[n];
    for (int i = 0; i < n; i++) {
      int node = i;
      threads[i] =
          new Thread(
              () -> {
                try {
                  reports.set(node, node(node));
                } finally {
                  done.countDown();
                }
              },
              "redlock-probe-" + i);
      threads[i].setDaemon(true);
      threads[i].start();
    }
    try {
      long left = deadline - quorum.ticker.read() + GRACE_NANOS;
      done.await(Math.max(0, left), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    List<NodeReport> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      NodeReport r = reports.get(i);
      if (r == null) {
        threads[i].interrupt();
        r = unreachable(i, noAnswer());
      }
      out.add(r);
    }
    return out;
  }

  private NodeReport node(int i) {
    LockNode node = quorum.nodes[i];
    NodeCapabilities caps = node.capabilities();
    Duration ttl = caps.ttlPrecision().multipliedBy(2);
    ttl = ttl.compareTo(KEY_TTL) > 0 ? ttl : KEY_TTL;
    List<Duration> roundTrips = new ArrayList<>();
    List<String> anomalies = new ArrayList<>();
    String error = null;
    String prefix = "redlock-probe:" + QuorumRedlock.newToken() + ":";
    for (int r = 1; r <= rounds && error == null; r++) {
      String key = prefix + r;
      String token = QuorumRedlock.newToken();
      Duration keyTtl = ttl;
      try {
        AcquireResult acquired =
            timed(i, "probe acquire", () -> node.tryAcquire(key, token, keyTtl), roundTrips);
        if (!acquired.acquired()) {
          anomalies.add("round " + r + ": a fresh random key was reported as held");
          continue;
        }
        if (!timed(i, "probe extend", () -> node.extend(key, token, keyTtl), roundTrips)) {
          anomalies.add("round " + r + ": extend of a key just acquired was refused");
        }
        if (!timed(i, "probe release", () -> node.release(key, token), roundTrips)) {
          anomalies.add("round " + r + ": release of a key just acquired found no key");
        }
      } catch (RuntimeException e) {
        error = message(i, e);
      }
    }
    if (roundTrips.isEmpty()) {
      return unreachable(i, error == null ? noAnswer() : error);
    }
    NodeStatus status = null;
    String statusError = null;
    if (caps.status()) {
      try {
        status = quorum.fanOut.call("probe status", i, node::status, deadline);
      } catch (RuntimeException e) {
        statusError = message(i, e);
      }
    }
    Duration offset = null;
    Duration uncertainty = null;
    String clockError = null;
    String clockNote = null;
    if (caps.clock()) {
      long bestRtt = Long.MAX_VALUE;
      for (int r = 0; r < Math.min(rounds, MAX_CLOCK_READS); r++) {
        Instant t0 = Instant.now();
        long start = quorum.ticker.read();
        try {
          Instant server = quorum.fanOut.call("probe clock", i, node::serverTime, deadline);
          long rtt = quorum.ticker.read() - start;
          if (rtt < bestRtt) {
            bestRtt = rtt;
            offset = Duration.between(t0.plusNanos(rtt / 2), server);
            uncertainty = Duration.ofNanos(rtt / 2);
          }
        } catch (RuntimeException e) {
          clockError = message(i, e);
          break;
        }
      }
      clockNote = localClock(quorum.names[i]);
    } else {
      clockNote = "the backend does not read the store's clock (capabilities().clock() is false)";
    }
    return new NodeReport(
        quorum.names[i],
        Optional.ofNullable(error),
        roundTrips,
        anomalies,
        caps,
        Optional.ofNullable(status),
        Optional.ofNullable(statusError),
        Optional.ofNullable(offset),
        Optional.ofNullable(uncertainty),
        Optional.ofNullable(offset == null ? clockError : null),
        Optional.ofNullable(clockNote),
        quarantine(caps, status),
        Optional.ofNullable(quarantineLeft(status)));
  }

  /** One lock call, its round trip added to {@code roundTrips} if it was answered. */
  private <T> T timed(
      int i,
      String operation,
      java.util.function.Supplier<io.redlock.spi.Reply<T>> call,
      List<Duration> roundTrips) {
    long start = quorum.ticker.read();
    T answer = quorum.fanOut.call(operation, i, call, deadline);
    roundTrips.add(Duration.ofNanos(quorum.ticker.read() - start));
    return answer;
  }

  private NodeReport unreachable(int i, String error) {
    NodeCapabilities caps;
    try {
      caps = quorum.nodes[i].capabilities();
    } catch (RuntimeException e) {
      caps = NodeCapabilities.millisecondPrecision();
    }
    return new NodeReport(
        quorum.names[i],
        Optional.of(error),
        List.of(),
        List.of(),
        caps,
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        NodeReport.Quarantine.NOT_APPLICABLE,
        Optional.empty());
  }

  private String noAnswer() {
    return "no answer within the probe's timeout of " + timeout.toMillis() + " ms";
  }

  private NodeReport.Quarantine quarantine(NodeCapabilities caps, NodeStatus status) {
    boolean on = settings.restartQuarantineEnabled();
    if (!caps.status()) {
      return on ? NodeReport.Quarantine.UNSUPPORTED : NodeReport.Quarantine.NOT_APPLICABLE;
    }
    if (status == null) {
      return on ? NodeReport.Quarantine.STATUS_UNREADABLE : NodeReport.Quarantine.NOT_APPLICABLE;
    }
    if (status.durable()) {
      return NodeReport.Quarantine.NOT_NEEDED;
    }
    if (!on) {
      return NodeReport.Quarantine.OFF;
    }
    return quarantineLeft(status) == null
        ? NodeReport.Quarantine.PASSED
        : NodeReport.Quarantine.ACTIVE;
  }

  /**
   * How long until a node that is not durable votes: the maximum TTL plus its drift allowance, less
   * its uptime; null if it votes already, or quarantine does not apply.
   */
  private Duration quarantineLeft(NodeStatus status) {
    Duration maxTtl = settings.restartQuarantine();
    if (maxTtl == null || status == null || status.durable()) {
      return null;
    }
    Duration left = maxTtl.plus(settings.driftFor(maxTtl)).minus(status.uptime());
    return left.isNegative() || left.isZero() ? null : left;
  }

  /**
   * For a store that runs inside this process, and so reads this machine's clock whatever it
   * reports: a note that says so; else null. SQLite is a library in every process that opens the
   * file; H2 is in-process unless reached over {@code tcp:} or {@code ssl:}.
   */
  static String localClock(String name) {
    if (name.startsWith("jdbc:sqlite:")) {
      return "this machine's own clock: SQLite runs in this process";
    }
    if (name.startsWith("jdbc:h2:")
        && !name.startsWith("jdbc:h2:tcp:")
        && !name.startsWith("jdbc:h2:ssl:")) {
      return "this machine's own clock: H2 runs in this process";
    }
    return null;
  }

  /** The failure's message, redacted, without the node's name in front (the report names it). */
  private String message(int i, RuntimeException e) {
    String name = quorum.names[i];
    String m = NodeUri.redact(String.valueOf(e.getMessage()));
    return m.startsWith(name + ": ") ? m.substring(name.length() + 2) : m;
  }
}
