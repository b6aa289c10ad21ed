package io.redlock.spring.boot;

import io.redlock.Lease;
import io.redlock.NodeHealth;
import io.redlock.NodeTimeoutException;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import io.redlock.RedlockSettings;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.Status;

/**
 * The health of a {@link Redlock} from the same probes as {@code redlock doctor}: a quorum
 * reachable, nodes down, clock offsets and restart quarantine.
 *
 * <ul>
 *   <li>{@code UP} when at least a quorum (N/2+1) of nodes is up: locks can be had;
 *   <li>{@code DOWN} when more than N - quorum nodes are down: no lock can be had;
 *   <li>{@code UNKNOWN} otherwise (nodes not called yet).
 * </ul>
 *
 * <p>Node states come from the calls the application makes ({@link Redlock#health()}), so in an
 * idle application they age. When a probe resource is set and the states are not fresh (some node
 * is not up, or has not answered for {@code probeAfter}: at start-up, while nodes fail, or when
 * nothing was locked for a while), the check first makes one lock attempt on the probe resource
 * (acquired and released at once, or found held: either way every node is asked), so that the state
 * it reports is current. A node counts as down after {@value NodeHealth#FAILURES_TO_DOWN} failed
 * calls in a row, so a node that just died may take a few checks to show.
 *
 * <p>Node checks: for the nodes it was given (those the starter opened from {@code redlock.nodes}),
 * the check also asks each node for its store's clock ({@link LockNode#serverTime()}, if the node
 * declares {@link NodeCapabilities#clock()}) and its status ({@link LockNode#status()}, if it
 * declares {@link NodeCapabilities#status()}): all calls are started at once and awaited against
 * one deadline ({@code nodeCheckTimeout}), a call without an answer by then is abandoned. The
 * result is kept for {@code probeAfter}, so that frequent health polls do not load the nodes.
 *
 * <p>Details: {@code quorum}, {@code nodesUp}, {@code fencing}, {@code restartQuarantineEnabled},
 * {@code restartQuarantine} (the maximum TTL, when on), {@code nodeChecksMillisAgo} (the age of the
 * node checks shown), {@code warnings} (when there is something to warn about), and per node (by
 * its redacted name: no password) its {@code state}, {@code callsInFlight}, {@code
 * lastAnswerMillisAgo}, {@code lastError}, and from the node checks {@code clockOffsetMs} (the
 * store's clock minus this machine's, positive when the store is ahead: the store's time minus the
 * midpoint of the call on this machine's clock), {@code clockOffsetUncertaintyMs} (half the call's
 * round trip), {@code clockNote}, {@code clockError}, {@code durable}, {@code incarnation}, {@code
 * uptimeSeconds}, {@code statusError}, {@code quarantine} (one of {@code n/a}, {@code not-needed},
 * {@code off}, {@code passed}, {@code active}, {@code status-unreadable}, {@code unsupported}, as
 * {@code redlock doctor --json} reports it) and {@code quarantineLeftMs} (for {@code active}).
 *
 * <p>Warnings never change the status: a store clock more than 1 s from this machine's beyond the
 * read's uncertainty (the limit beyond which {@code redlock doctor} warns), a node that is not
 * durable while restart quarantine is off, nodes in restart quarantine (their votes do not count
 * yet), and, with quarantine on, nodes whose status could not be read.
 */
public class RedlockHealthIndicator extends AbstractHealthIndicator {
  /** The TTL of the probe's lease: short, but well above any drift allowance. */
  private static final Duration PROBE_TTL = Duration.ofSeconds(2);

  /**
   * Beyond this, a store's clock counts as not synchronised with this machine's: the value of
   * {@code redlock doctor}'s limit ({@code Verdict.CLOCK_OFFSET_LIMIT} in redlock-cli).
   */
  static final long CLOCK_OFFSET_LIMIT_MILLIS = 1_000;

  private static final Duration CLOCK_OFFSET_LIMIT = Duration.ofMillis(CLOCK_OFFSET_LIMIT_MILLIS);

  /** The node-check timeout of the three-argument constructor. */
  private static final Duration DEFAULT_NODE_CHECK_TIMEOUT = Duration.ofSeconds(1);

  private final Redlock redlock;
  private final String probeResource;
  private final Duration probeAfter;
  private final List<LockNode> nodes;
  private final Duration nodeCheckTimeout;

  /** Guards {@link #checks}' refresh, so that concurrent polls make one round of node checks. */
  private final Object checking = new Object();

  private volatile Checks checks;

  /**
   * A health indicator without node checks (no clock offsets, durability or quarantine state).
   *
   * @param redlock the Redlock to report on
   * @param probeResource the resource to lock for an instant when the node states are not fresh, or
   *     {@code null} never to probe
   * @param probeAfter how old a node's last answer may be before the check probes
   */
  public RedlockHealthIndicator(Redlock redlock, String probeResource, Duration probeAfter) {
    this(redlock, probeResource, probeAfter, List.of(), DEFAULT_NODE_CHECK_TIMEOUT);
  }

  /**
   * A health indicator that also checks {@code nodes}' clocks and status.
   *
   * @param redlock the Redlock to report on
   * @param probeResource the resource to lock for an instant when the node states are not fresh, or
   *     {@code null} never to probe
   * @param probeAfter how old a node's last answer may be before the check probes; also how long
   *     the node checks' result is kept
   * @param nodes the Redlock's nodes to ask for their clock and status (the caller keeps owning
   *     them: this never closes them); empty for no node checks
   * @param nodeCheckTimeout how long to wait for the node checks, all nodes at once
   */
  public RedlockHealthIndicator(
      Redlock redlock,
      String probeResource,
      Duration probeAfter,
      List<? extends LockNode> nodes,
      Duration nodeCheckTimeout) {
    super("Redlock health check failed");
    this.redlock = Objects.requireNonNull(redlock, "redlock must not be null");
    this.probeResource = probeResource;
    this.probeAfter = Objects.requireNonNull(probeAfter, "probeAfter must not be null");
    this.nodes = List.copyOf(Objects.requireNonNull(nodes, "nodes must not be null"));
    this.nodeCheckTimeout =
        Objects.requireNonNull(nodeCheckTimeout, "nodeCheckTimeout must not be null");
    if (nodeCheckTimeout.isNegative() || nodeCheckTimeout.isZero()) {
      throw new IllegalArgumentException(
          "nodeCheckTimeout must be positive, got " + nodeCheckTimeout);
    }
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    List<NodeHealth> states = redlock.health();
    if (probeResource != null && !fresh(states)) {
      probe();
      states = redlock.health();
    }
    Checks current = nodes.isEmpty() ? null : checks();
    RedlockSettings settings = redlock.settings();
    Duration quarantine = settings.restartQuarantineEnabled() ? settings.restartQuarantine() : null;
    Duration votesAfter =
        quarantine == null ? null : quarantine.plus(settings.driftFor(quarantine));

    long up = states.stream().filter(n -> n.state() == NodeHealth.State.UP).count();
    builder.status(status(states));
    builder.withDetail("quorum", redlock.quorum());
    builder.withDetail("nodesUp", up);
    builder.withDetail("fencing", settings.fencing());
    builder.withDetail("restartQuarantineEnabled", quarantine != null);
    if (quarantine != null) {
      builder.withDetail("restartQuarantine", quarantine.toString());
    }
    Map<String, Map<String, Object>> perNode = new LinkedHashMap<>();
    for (NodeHealth n : states) {
      Map<String, Object> d = new LinkedHashMap<>();
      d.put("state", n.state().name());
      d.put("callsInFlight", n.callsInFlight());
      n.sinceLastAnswer().ifPresent(s -> d.put("lastAnswerMillisAgo", s.toMillis()));
      n.lastError().ifPresent(e -> d.put("lastError", e));
      perNode.put(n.node(), d);
    }
    List<String> warnings = new ArrayList<>();
    if (current != null) {
      builder.withDetail(
          "nodeChecksMillisAgo",
          Duration.ofNanos(Math.max(0, System.nanoTime() - current.takenNanos())).toMillis());
      report(current, perNode, quarantine, votesAfter, redlock.quorum(), warnings);
    }
    if (!warnings.isEmpty()) {
      builder.withDetail("warnings", warnings);
    }
    builder.withDetail("nodes", perNode);
  }

  private boolean fresh(List<NodeHealth> nodes) {
    for (NodeHealth n : nodes) {
      if (n.state() != NodeHealth.State.UP
          || n.sinceLastAnswer().map(d -> d.compareTo(probeAfter) > 0).orElse(true)) {
        return false;
      }
    }
    return true;
  }

  private Status status(List<NodeHealth> nodes) {
    long up = nodes.stream().filter(n -> n.state() == NodeHealth.State.UP).count();
    long down = nodes.stream().filter(n -> n.state() == NodeHealth.State.DOWN).count();
    int quorum = redlock.quorum();
    if (up >= quorum) {
      return Status.UP;
    }
    return down > nodes.size() - quorum ? Status.DOWN : Status.UNKNOWN;
  }

  /** One attempt on the probe resource: refreshes every node's state. */
  private void probe() {
    Duration ttl = PROBE_TTL;
    Duration quarantine = redlock.settings().restartQuarantine();
    if (quarantine != null && quarantine.compareTo(ttl) < 0) {
      ttl = quarantine;
    }
    try {
      Lease lease = redlock.acquire(probeResource, ttl, Duration.ZERO);
      lease.release();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RedlockException | IllegalArgumentException | IllegalStateException e) {
      // held elsewhere, nodes unreachable, or closed: the node states say which
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Node checks: clock and status, as redlock doctor reads them

  /**
   * What one node said at the last check; null fields were not read.
   *
   * @param clockOffset the store's clock minus this machine's
   * @param clockUncertainty half the round trip of the clock read
   * @param localClock why the store's clock is this machine's own (it runs in this process), or
   *     null
   */
  private record NodeFacts(
      boolean readsClock,
      Duration clockOffset,
      Duration clockUncertainty,
      String clockError,
      String localClock,
      boolean reportsStatus,
      NodeStatus status,
      String statusError) {}

  /** The node checks' result, and when it was taken (on {@link System#nanoTime()}). */
  private record Checks(long takenNanos, Map<String, NodeFacts> byNode) {}

  /** The node checks' result, made anew when older than {@code probeAfter}. */
  private Checks checks() {
    Checks c = checks;
    if (c != null && System.nanoTime() - c.takenNanos() < probeAfter.toNanos()) {
      return c;
    }
    synchronized (checking) {
      c = checks;
      if (c != null && System.nanoTime() - c.takenNanos() < probeAfter.toNanos()) {
        return c; // another poll just made them
      }
      c = new Checks(System.nanoTime(), checkNodes());
      checks = c;
      return c;
    }
  }

  /**
   * Starts the clock read and the status read on every node that declares them, then awaits them
   * all against one deadline; a reply not there by then is abandoned.
   */
  @SuppressWarnings("unchecked")
  private Map<String, NodeFacts> checkNodes() {
    int n = nodes.size();
    String[] names = new String[n];
    NodeCapabilities[] caps = new NodeCapabilities[n];
    Reply<Instant>[] clockReplies = new Reply[n];
    Instant[] clockStartWall = new Instant[n];
    long[] clockStartNanos = new long[n];
    Reply<NodeStatus>[] statusReplies = new Reply[n];
    String[] clockErrors = new String[n];
    String[] statusErrors = new String[n];
    for (int i = 0; i < n; i++) {
      LockNode node = nodes.get(i);
      names[i] = name(node);
      try {
        caps[i] = node.capabilities();
      } catch (RuntimeException e) {
        clockErrors[i] = message(names[i], e);
        statusErrors[i] = clockErrors[i];
        continue;
      }
      if (caps[i].clock()) {
        try {
          clockStartWall[i] = Instant.now();
          clockStartNanos[i] = System.nanoTime();
          clockReplies[i] = node.serverTime();
        } catch (RuntimeException e) { // closed, or a backend that throws instead of failing
          clockErrors[i] = message(names[i], e);
        }
      }
      if (caps[i].status()) {
        try {
          statusReplies[i] = node.status();
        } catch (RuntimeException e) {
          statusErrors[i] = message(names[i], e);
        }
      }
    }
    // A reply may hold its call back for the awaiting thread (Reply.runsOnAwait): send them all,
    // so that every node is asked at once.
    for (int i = 0; i < n; i++) {
      send(clockReplies[i]);
      send(statusReplies[i]);
    }
    long deadline = System.nanoTime() + nodeCheckTimeout.toNanos();
    Map<String, NodeFacts> out = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      Duration offset = null;
      Duration uncertainty = null;
      if (clockReplies[i] != null) {
        try {
          Instant server = await(clockReplies[i], deadline);
          long rtt = System.nanoTime() - clockStartNanos[i];
          offset = Duration.between(clockStartWall[i].plusNanos(rtt / 2), server);
          uncertainty = Duration.ofNanos(rtt / 2);
        } catch (RuntimeException e) {
          clockErrors[i] = message(names[i], e);
        }
      }
      NodeStatus status = null;
      if (statusReplies[i] != null) {
        try {
          status = await(statusReplies[i], deadline);
        } catch (RuntimeException e) {
          statusErrors[i] = message(names[i], e);
        }
      }
      boolean readsClock = caps[i] != null && caps[i].clock();
      out.put(
          names[i],
          new NodeFacts(
              readsClock,
              offset,
              uncertainty,
              clockErrors[i],
              readsClock ? localClock(names[i]) : null,
              caps[i] != null && caps[i].status(),
              status,
              statusErrors[i]));
    }
    return out;
  }

  private static void send(Reply<?> reply) {
    if (reply != null) {
      try {
        reply.send();
      } catch (RuntimeException e) {
        // its await reports the failure
      }
    }
  }

  /**
   * Awaits {@code reply} until {@code deadline} (only an answer already there once it passed); one
   * that did not come in time, or whose wait was interrupted, is abandoned.
   */
  private <T> T await(Reply<T> reply, long deadline) {
    long left = Math.max(0, deadline - System.nanoTime());
    try {
      return reply.await(Duration.ofNanos(left));
    } catch (NodeTimeoutException e) {
      reply.abandon(late -> {});
      throw new NodeTimeoutException(
          null,
          nodeCheckTimeout,
          "no answer within the health check's node-check timeout of "
              + nodeCheckTimeout.toMillis()
              + " ms (redlock.health.node-check-timeout)");
    } catch (RuntimeException e) {
      if (Thread.currentThread().isInterrupted()) {
        reply.abandon(late -> {}); // the call may still go out: let the backend clean up
      }
      throw e;
    }
  }

  /** Adds the node checks to the per-node details, and their warnings. */
  private static void report(
      Checks checks,
      Map<String, Map<String, Object>> perNode,
      Duration quarantine,
      Duration votesAfter,
      int quorum,
      List<String> warnings) {
    Duration age = Duration.ofNanos(Math.max(0, System.nanoTime() - checks.takenNanos()));
    List<String> clockOff = new ArrayList<>();
    List<String> notDurable = new ArrayList<>();
    List<String> active = new ArrayList<>();
    List<Duration> activeLeft = new ArrayList<>();
    List<String> unreadable = new ArrayList<>();
    // Nodes whose votes count now, as redlock doctor counts them: they answered, and are not kept
    // out by restart quarantine. Nodes not checked count if the Redlock saw them up.
    int voters = 0;
    for (Map.Entry<String, Map<String, Object>> e : perNode.entrySet()) {
      if (!checks.byNode().containsKey(e.getKey()) && "UP".equals(e.getValue().get("state"))) {
        voters++;
      }
    }
    for (Map.Entry<String, NodeFacts> e : checks.byNode().entrySet()) {
      String name = e.getKey();
      NodeFacts f = e.getValue();
      Map<String, Object> d = perNode.computeIfAbsent(name, k -> new LinkedHashMap<>());
      if (f.clockOffset() != null) {
        d.put("clockOffsetMs", millis(f.clockOffset()));
        d.put("clockOffsetUncertaintyMs", millis(f.clockUncertainty()));
        Duration abs = f.clockOffset().abs();
        if (f.localClock() == null
            && abs.compareTo(CLOCK_OFFSET_LIMIT) > 0
            && abs.minus(f.clockUncertainty()).compareTo(CLOCK_OFFSET_LIMIT) > 0) {
          clockOff.add(name + " (" + describeOffset(f.clockOffset(), f.clockUncertainty()) + ")");
        }
      }
      if (!f.readsClock()) {
        d.put("clockNote", "the backend does not read the store's clock");
      } else if (f.localClock() != null) {
        d.put("clockNote", f.localClock());
      }
      if (f.clockError() != null) {
        d.put("clockError", f.clockError());
      }
      NodeStatus s = f.status();
      // The status is as old as the checks: the store has been up that much longer since.
      Duration uptime = s == null ? null : s.uptime().plus(age);
      if (s != null) {
        d.put("durable", s.durable());
        d.put("incarnation", NodeUri.redact(s.incarnation()));
        d.put("uptimeSeconds", uptime.toSeconds());
      }
      if (f.statusError() != null) {
        d.put("statusError", f.statusError());
      }
      String state;
      if (!f.reportsStatus()) {
        state = quarantine == null ? "n/a" : "unsupported";
      } else if (s == null) {
        state = quarantine == null ? "n/a" : "status-unreadable";
        if (quarantine != null) {
          unreadable.add(name);
        }
      } else if (s.durable()) {
        state = "not-needed";
      } else if (quarantine == null) {
        state = "off";
        String why = s.details().get("durability");
        notDurable.add(
            why == null || why.isBlank()
                ? name
                : name + " (" + NodeUri.redact(why.replaceFirst("^not durable: ", "")) + ")");
      } else {
        Duration left = votesAfter.minus(uptime);
        if (left.isNegative() || left.isZero()) {
          state = "passed";
        } else {
          state = "active";
          d.put("quarantineLeftMs", left.toMillis());
          active.add(name + " (up " + format(uptime) + ")");
          activeLeft.add(left);
        }
      }
      d.put("quarantine", state);
      // (a status may come from the node's memory: a node the Redlock sees down does not count)
      boolean answered = (f.clockOffset() != null || s != null) && !"DOWN".equals(d.get("state"));
      if (answered && !state.equals("active") && !state.equals("status-unreadable")) {
        voters++;
      }
    }
    if (!clockOff.isEmpty()) {
      warnings.add(
          "store clock not synchronised with this machine's (more than "
              + format(CLOCK_OFFSET_LIMIT)
              + " off, the limit of redlock doctor): "
              + String.join(", ", clockOff)
              + ". Redlock itself needs only clock rates to agree, but a clock this far off will"
              + " be corrected some day, and a correction that steps the clock moves every expiry"
              + " on that store at once (a forward step shortens every lock it holds). Enable NTP"
              + " (chrony, ntpd or systemd-timesyncd) on "
              + (clockOff.size() == 1 ? "that host" : "those hosts")
              + " or on this machine, configured to slew, not step, once running");
    }
    if (!notDurable.isEmpty()) {
      warnings.add(
          "not durable, and restart quarantine is off: "
              + String.join(", ", notDurable)
              + ". A node whose lock state is not durable forgets the locks it granted when it"
              + " restarts, and could then help a second client to a majority. Make "
              + (notDurable.size() == 1 ? "it" : "them")
              + " durable (Redis: appendonly yes with appendfsync always; PostgreSQL: fsync and"
              + " synchronous_commit on; SQLite: synchronous=FULL), or set"
              + " redlock.restart-quarantine to the longest lock TTL in use: a restarted node that"
              + " is not durable then votes only once it has been up that long");
    }
    if (!active.isEmpty()) {
      String consequence;
      if (voters < quorum) {
        activeLeft.sort(null);
        int needed = quorum - voters;
        consequence =
            "; only "
                + voters
                + " of "
                + perNode.size()
                + " nodes may vote now and a quorum needs "
                + quorum
                + ", so no lock can be acquired ("
                + (needed <= activeLeft.size()
                    ? "in " + format(activeLeft.get(needed - 1)) + " at the earliest"
                    : "not until more nodes answer with a readable status")
                + "). This is the price of safety after a restart: the locks such a node forgot"
                + " may still be held elsewhere until then";
      } else {
        consequence =
            "; their votes do not count yet, locks work with the " + voters + " nodes that vote";
      }
      warnings.add(
          "in restart quarantine (not durable and up for less than "
              + format(votesAfter)
              + ", the maximum TTL plus drift): "
              + String.join(", ", active)
              + consequence);
    }
    if (!unreadable.isEmpty()) {
      warnings.add(
          "status could not be read, so under restart quarantine their votes do not count: "
              + String.join(", ", unreadable));
    }
  }

  /** The name the Redlock reports the node by ({@link NodeHealth#node()}): redacted. */
  private static String name(LockNode node) {
    try {
      return NodeUri.redact(String.valueOf(node.name()));
    } catch (RuntimeException e) {
      return "node@" + Integer.toHexString(System.identityHashCode(node));
    }
  }

  /**
   * For a store that runs inside this process, and so reads this machine's clock whatever it
   * reports: a note that says so; else null. As {@code redlock doctor} decides it: SQLite is a
   * library in every process that opens the file; H2 is in-process unless reached over {@code tcp:}
   * or {@code ssl:}.
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

  /** The failure's message, redacted, without the node's name in front (the details name it). */
  private static String message(String name, RuntimeException e) {
    String m = NodeUri.redact(String.valueOf(e.getMessage()));
    return m.startsWith(name + ": ") ? m.substring(name.length() + 2) : m;
  }

  /** Milliseconds to the microsecond. */
  private static double millis(Duration d) {
    return Math.round(d.toNanos() / 1_000.0) / 1_000.0;
  }

  /** E.g. "store 30.02 s ahead ± 0.212 ms". */
  static String describeOffset(Duration offset, Duration uncertainty) {
    return "store "
        + format(offset.abs())
        + (offset.isNegative() ? " behind" : " ahead")
        + " ± "
        + format(uncertainty);
  }

  /** E.g. "30.02 s", "1.5 ms", "212 µs". */
  static String format(Duration d) {
    long nanos = d.toNanos();
    if (nanos >= 1_000_000_000L) {
      return String.format(Locale.ROOT, "%.2f s", nanos / 1e9).replace(".00 s", " s");
    }
    if (nanos >= 1_000_000L) {
      return String.format(Locale.ROOT, "%.1f ms", nanos / 1e6).replace(".0 ms", " ms");
    }
    return (nanos / 1_000) + " µs";
  }
}
