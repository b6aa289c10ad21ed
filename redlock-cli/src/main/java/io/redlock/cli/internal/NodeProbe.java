package io.redlock.cli.internal;

import io.redlock.NodeTimeoutException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Probes one open node for the doctor: one call to see that it answers (connecting included), then
 * timed cycles of tryAcquire + extend + release on fresh random keys, its status report if the node
 * declares one, and its clock offset from this machine if it reads its store's clock. Nothing is
 * guessed: what the node does not report stays null.
 */
final class NodeProbe {
  private static final SecureRandom RANDOM = new SecureRandom();

  /**
   * Keys of {@link NodeStatus#details()} that name the server's version, in order of preference.
   */
  private static final List<String> VERSION_KEYS =
      List.of("version", "server_version", "serverVersion", "redis_version");

  /**
   * One node's results; durations in milliseconds, null where not measured or not reported.
   *
   * @param fencing whether the node keeps fencing counters (exec --fencing); null if not opened
   * @param reportsStatus whether the node declares status reports; null if not opened
   * @param serverVersion, uptimeSeconds, durable, incarnation, details from {@link
   *     LockNode#status()}; null where the node does not report a status or the report failed
   * @param quarantine where the node stands with respect to restart quarantine: one of n/a,
   *     not-needed, off, passed, active, status-unreadable, unsupported (see {@link
   *     Restarts.QuarantineState}); filled in by the doctor, which knows the settings
   * @param quarantineLeftMs for "active": how long until its votes count
   * @param readsClock whether the node declares reads of the store's clock ({@link
   *     LockNode#serverTime()}); null if not opened
   * @param clockOffsetMs the store's clock minus this machine's, in milliseconds (positive: the
   *     store is ahead), NTP-style from the read with the shortest round trip: the store's time
   *     minus the midpoint of the call on this machine's clock; null if the node does not read its
   *     clock or every read failed
   * @param clockOffsetUncertaintyMs half that read's round trip: the offset is right within this
   *     (plus the store clock's resolution)
   * @param clockError why reading the store's clock failed, if it did
   * @param clockNote why the offset is null, or that the store runs in this process and reads this
   *     machine's own clock (SQLite, in-process H2), so that its offset is ours by definition
   */
  record NodeReport(
      String node,
      String backend,
      boolean reachable,
      String error,
      Double openMs,
      Double firstCallMs,
      int roundTrips,
      Double rttMedianMs,
      Double rttWorstMs,
      Double ttlPrecisionMs,
      Boolean fencing,
      List<String> anomalies,
      Boolean reportsStatus,
      String serverVersion,
      String incarnation,
      Double uptimeSeconds,
      Boolean durable,
      Map<String, String> details,
      String statusError,
      String quarantine,
      Double quarantineLeftMs,
      Boolean readsClock,
      Double clockOffsetMs,
      Double clockOffsetUncertaintyMs,
      String clockError,
      String clockNote) {

    static NodeReport unreachable(String name, String backend, Double openMs, String why) {
      return new NodeReport(
          name, backend, false, why, openMs, null, 0, null, null, null, null, List.of(), null, null,
          null, null, null, null, null, null, null, null, null, null, null, null);
    }

    /** A copy with the restart-quarantine state the doctor worked out. */
    NodeReport withQuarantine(String state, Double leftMs) {
      return new NodeReport(
          node,
          backend,
          reachable,
          error,
          openMs,
          firstCallMs,
          roundTrips,
          rttMedianMs,
          rttWorstMs,
          ttlPrecisionMs,
          fencing,
          anomalies,
          reportsStatus,
          serverVersion,
          incarnation,
          uptimeSeconds,
          durable,
          details,
          statusError,
          state,
          leftMs,
          readsClock,
          clockOffsetMs,
          clockOffsetUncertaintyMs,
          clockError,
          clockNote);
    }

    /** The clock offset as a Duration, or null. */
    Duration clockOffset() {
      return clockOffsetMs == null ? null : Duration.ofNanos(Math.round(clockOffsetMs * 1e6));
    }

    /** The clock offset's uncertainty as a Duration, or null. */
    Duration clockUncertainty() {
      return clockOffsetUncertaintyMs == null
          ? null
          : Duration.ofNanos(Math.round(clockOffsetUncertaintyMs * 1e6));
    }

    /** The uptime as a Duration, or null. */
    Duration uptime() {
      return uptimeSeconds == null ? null : Duration.ofMillis(Math.round(uptimeSeconds * 1000));
    }
  }

  private NodeProbe() {}

  static NodeReport probe(
      String name, LockNode node, Double openMs, Duration ttl, int probes, Duration timeout) {
    return probe(name, node, openMs, ttl, probes, timeout, System.nanoTime() + Long.MAX_VALUE / 2);
  }

  /**
   * Probes the node; every call waits at most {@code timeout}, and none past {@code deadline}
   * (System.nanoTime): what is not done by then fails with a message saying so.
   */
  static NodeReport probe(
      String name,
      LockNode node,
      Double openMs,
      Duration ttl,
      int probes,
      Duration probeTimeout,
      long deadline) {
    Supplier<Duration> timeout = () -> within(probeTimeout, deadline);
    String backend = node.getClass().getSimpleName();
    NodeCapabilities caps = node.capabilities();
    List<String> anomalies = new ArrayList<>();
    String prefix = "redlock-doctor:" + randomId() + ":";
    Samples rtt = new Samples();
    long firstNanos;
    try {
      String key = prefix + "0";
      String token = randomId();
      long start = System.nanoTime();
      AcquireResult first = call(() -> node.tryAcquire(key, token, ttl), timeout);
      firstNanos = System.nanoTime() - start;
      if (!first.acquired()) {
        anomalies.add("a fresh random key was reported as held by another client");
      } else {
        call(() -> node.release(key, token), timeout);
      }
    } catch (RuntimeException e) {
      return NodeReport.unreachable(name, backend, openMs, message(name, node, e));
    }
    String error = null;
    for (int i = 1; i <= probes && error == null; i++) {
      String key = prefix + i;
      String token = randomId();
      try {
        long a = System.nanoTime();
        boolean acquired = call(() -> node.tryAcquire(key, token, ttl), timeout).acquired();
        long b = System.nanoTime();
        boolean extended = call(() -> node.extend(key, token, ttl), timeout);
        long c = System.nanoTime();
        boolean released = call(() -> node.release(key, token), timeout);
        long d = System.nanoTime();
        rtt.add(b - a);
        rtt.add(c - b);
        rtt.add(d - c);
        if (!acquired) {
          anomalies.add("probe " + i + ": a fresh random key was reported as held");
        } else if (!extended) {
          anomalies.add("probe " + i + ": extend of a key just acquired was refused");
        } else if (!released) {
          anomalies.add("probe " + i + ": release of a key just acquired found no key");
        }
      } catch (RuntimeException e) {
        error = "probe " + i + " failed: " + message(name, node, e);
      }
    }
    NodeStatus status = null;
    String statusError = null;
    if (caps.status()) {
      try {
        status = call(node::status, timeout);
      } catch (RuntimeException e) {
        statusError = message(name, node, e);
      }
    }
    ClockOffset clock = null;
    String clockError = null;
    String clockNote = null;
    if (caps.clock()) {
      try {
        clock =
            clockOffset(
                node, Math.min(MAX_CLOCK_READS, Math.max(MIN_CLOCK_READS, probes)), timeout);
      } catch (RuntimeException e) {
        clockError = message(name, node, e);
      }
      clockNote = localClock(name);
    } else {
      clockNote = "the backend does not read the store's clock (capabilities().clock() is false)";
    }
    return new NodeReport(
        name,
        backend,
        true,
        error,
        openMs,
        Durations.millis(firstNanos),
        rtt.size(),
        rtt.size() == 0 ? null : Durations.millis(rtt.median()),
        rtt.size() == 0 ? null : Durations.millis(rtt.max()),
        Durations.millis(caps.ttlPrecision()),
        caps.fencing(),
        anomalies,
        caps.status(),
        status == null ? null : version(status.details()),
        status == null ? null : status.incarnation(),
        status == null ? null : status.uptime().toMillis() / 1000.0,
        status == null ? null : status.durable(),
        status == null ? null : status.details(),
        statusError,
        null,
        null,
        caps.clock(),
        clock == null ? null : Durations.millis(clock.offset()),
        clock == null ? null : Durations.millis(clock.uncertainty()),
        clockError,
        clockNote);
  }

  /** Reads of the store's clock per node: the probe count, within these bounds. */
  static final int MIN_CLOCK_READS = 3;

  static final int MAX_CLOCK_READS = 20;

  /**
   * The store's clock minus this machine's, and half the round trip of the read it comes from.
   *
   * @param reads how many reads were made; the one with the shortest round trip counts
   */
  record ClockOffset(Duration offset, Duration uncertainty, int reads) {}

  /**
   * Estimates a store's clock offset as NTP does: each read is timed on this machine, the store
   * read its clock somewhere inside that interval, so {@code offset = server - (t0 + t1) / 2} is
   * right within half the round trip; the read with the shortest round trip wins. The interval is
   * timed with the monotonic clock from one wall-clock reading, so a step of this machine's clock
   * during a read cannot distort it.
   */
  static ClockOffset clockOffset(LockNode node, int reads, Duration timeout) {
    return clockOffset(node, reads, () -> timeout);
  }

  private static ClockOffset clockOffset(LockNode node, int reads, Supplier<Duration> timeout) {
    long bestRtt = Long.MAX_VALUE;
    Duration bestOffset = null;
    for (int i = 0; i < reads; i++) {
      Instant t0 = Instant.now();
      long start = System.nanoTime();
      Instant server = call(node::serverTime, timeout);
      long rtt = System.nanoTime() - start;
      if (rtt < bestRtt) {
        bestRtt = rtt;
        bestOffset = Duration.between(t0.plusNanos(rtt / 2), server);
      }
    }
    return new ClockOffset(bestOffset, Duration.ofNanos(bestRtt / 2), reads);
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

  private static String version(Map<String, String> details) {
    for (String key : VERSION_KEYS) {
      String v = details.get(key);
      if (v != null && !v.isBlank()) {
        return v;
      }
    }
    return null;
  }

  /** The probe timeout, or what is left until the doctor's deadline if that is less. */
  private static Duration within(Duration probeTimeout, long deadline) {
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      throw new BudgetSpent();
    }
    return left < probeTimeout.toNanos() ? Duration.ofNanos(left) : probeTimeout;
  }

  /** The doctor's time budget ran out before this call. */
  static final class BudgetSpent extends RuntimeException {
    BudgetSpent() {
      super("doctor's time budget (--budget) ran out before this call", null, false, false);
    }
  }

  private static <T> T call(Supplier<Reply<T>> start, Supplier<Duration> timeout) {
    return call(start, timeout.get());
  }

  /**
   * One call, awaited for at most {@code timeout}; a reply that never came (or whose wait was
   * interrupted) is abandoned.
   */
  private static <T> T call(Supplier<Reply<T>> start, Duration timeout) {
    Reply<T> reply = start.get();
    try {
      return reply.await(timeout);
    } catch (NodeTimeoutException e) {
      reply.abandon(late -> {});
      throw e;
    } catch (RuntimeException e) {
      if (Thread.currentThread().isInterrupted()) {
        reply.abandon(late -> {}); // the call may still go out: let the backend clean up
      }
      throw e;
    }
  }

  /** The failure's message without the node's name in front (the report names the node). */
  static String message(String name, LockNode node, RuntimeException e) {
    String m = CliWords.translate(NodeUri.redact(String.valueOf(e.getMessage())));
    for (String prefix : new String[] {name, node == null ? null : NodeUri.redact(node.name())}) {
      if (prefix != null && m.startsWith(prefix + ": ")) {
        m = m.substring(prefix.length() + 2);
      }
    }
    return m;
  }

  private static String randomId() {
    byte[] bytes = new byte[12];
    RANDOM.nextBytes(bytes);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
  }
}
