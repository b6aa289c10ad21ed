package io.redlock.spring.boot;

import io.redlock.Lease;
import io.redlock.NodeHealth;
import io.redlock.NodeReport;
import io.redlock.NodeReport.Quarantine;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import io.redlock.RedlockSettings;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import java.time.Duration;
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
 * The health of a {@link Redlock} from the same probe as {@code redlock doctor} ({@link
 * Redlock#probe}): a quorum reachable, nodes down, clock offsets and restart quarantine.
 *
 * <ul>
 *   <li>{@code UP} when at least a quorum (N/2+1) of nodes is up: locks can be had;
 *   <li>{@code DOWN} when more than N - quorum nodes are down: no lock can be had;
 *   <li>{@code UNKNOWN} otherwise (nodes not called yet).
 * </ul>
 *
 * <p>Node states come from the calls the application makes ({@link Redlock#health()}), so in an
 * idle application they age. With node checks on, the check probes every node ({@link
 * Redlock#probe}: lock calls on a random key, status, clock, all nodes at once against {@code
 * nodeCheckTimeout}) at most once per {@code probeAfter}, and keeps the reports for that long.
 * Between probes, when a probe resource is set and the states are not fresh (some node is not up,
 * or has not answered for {@code probeAfter}), the check makes one lock attempt on the probe
 * resource, so that the state it reports is current. A node counts as down after {@value
 * NodeHealth#FAILURES_TO_DOWN} failed calls in a row, so a node that just died may take a few
 * checks to show.
 *
 * <p>Details: {@code quorum}, {@code nodesUp}, {@code fencing}, {@code restartQuarantineEnabled},
 * {@code restartQuarantine} (the maximum TTL, when on), {@code nodeChecksMillisAgo}, {@code
 * warnings} (when there is something to warn about), and per node (by its redacted name) its {@code
 * state}, {@code callsInFlight}, {@code lastAnswerMillisAgo}, {@code lastError}, and from the probe
 * {@code clockOffsetMs}, {@code clockOffsetUncertaintyMs}, {@code clockNote}, {@code clockError},
 * {@code durable}, {@code incarnation}, {@code uptimeSeconds}, {@code statusError}, {@code
 * quarantine} (as {@code redlock doctor --json} reports it) and {@code quarantineLeftMs}. Warnings
 * never change the status.
 */
public class RedlockHealthIndicator extends AbstractHealthIndicator {
  /** The TTL of the probe resource's lease: short, but well above any drift allowance. */
  private static final Duration PROBE_TTL = Duration.ofSeconds(2);

  /** Beyond this, a store's clock counts as not synchronised: {@code redlock doctor}'s limit. */
  static final long CLOCK_OFFSET_LIMIT_MILLIS = 1_000;

  private static final Duration CLOCK_OFFSET_LIMIT = Duration.ofMillis(CLOCK_OFFSET_LIMIT_MILLIS);

  private final Redlock redlock;
  private final String probeResource;
  private final Duration probeAfter;
  private final Duration nodeCheckTimeout;

  /** The last probe's reports and when they were taken (on {@link System#nanoTime()}). */
  private record Checks(long takenNanos, List<NodeReport> reports) {}

  private volatile Checks checks;

  /** A health indicator without node checks (no clock offsets, durability or quarantine state). */
  public RedlockHealthIndicator(Redlock redlock, String probeResource, Duration probeAfter) {
    this(redlock, probeResource, probeAfter, null);
  }

  /**
   * @param redlock the Redlock to report on
   * @param probeResource the resource to lock for an instant when the node states are not fresh, or
   *     {@code null} never to lock it
   * @param probeAfter how old a node's last answer, or the node checks, may be before a new look
   * @param nodeCheckTimeout how long a probe of every node may take, or {@code null} for no node
   *     checks
   */
  public RedlockHealthIndicator(
      Redlock redlock, String probeResource, Duration probeAfter, Duration nodeCheckTimeout) {
    super("Redlock health check failed");
    this.redlock = Objects.requireNonNull(redlock, "redlock must not be null");
    this.probeResource = probeResource;
    this.probeAfter = Objects.requireNonNull(probeAfter, "probeAfter must not be null");
    if (nodeCheckTimeout != null && (nodeCheckTimeout.isNegative() || nodeCheckTimeout.isZero())) {
      throw new IllegalArgumentException(
          "nodeCheckTimeout must be positive, got " + nodeCheckTimeout);
    }
    this.nodeCheckTimeout = nodeCheckTimeout;
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    Checks current = nodeCheckTimeout == null ? null : checks();
    List<NodeHealth> states = redlock.health();
    if (probeResource != null && !fresh(states)) {
      lockProbeResource();
      states = redlock.health();
    }
    RedlockSettings settings = redlock.settings();
    long up = states.stream().filter(n -> n.state() == NodeHealth.State.UP).count();
    long down = states.stream().filter(n -> n.state() == NodeHealth.State.DOWN).count();
    int quorum = redlock.quorum();
    builder.status(
        up >= quorum ? Status.UP : down > states.size() - quorum ? Status.DOWN : Status.UNKNOWN);
    builder.withDetail("quorum", quorum);
    builder.withDetail("nodesUp", up);
    builder.withDetail("fencing", settings.fencing());
    builder.withDetail("restartQuarantineEnabled", settings.restartQuarantineEnabled());
    if (settings.restartQuarantineEnabled()) {
      builder.withDetail("restartQuarantine", settings.restartQuarantine().toString());
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
    if (current != null) {
      Duration age = Duration.ofNanos(Math.max(0, System.nanoTime() - current.takenNanos()));
      builder.withDetail("nodeChecksMillisAgo", age.toMillis());
      List<String> warnings = report(current.reports(), age, perNode, settings, quorum);
      if (!warnings.isEmpty()) {
        builder.withDetail("warnings", warnings);
      }
    }
    builder.withDetail("nodes", perNode);
  }

  /** The last probe's reports, probing anew when they are older than {@code probeAfter}. */
  private Checks checks() {
    Checks c = checks;
    if (c != null && System.nanoTime() - c.takenNanos() < probeAfter.toNanos()) {
      return c;
    }
    synchronized (this) {
      c = checks;
      if (c == null || System.nanoTime() - c.takenNanos() >= probeAfter.toNanos()) {
        c = new Checks(System.nanoTime(), redlock.probe(nodeCheckTimeout));
        checks = c;
      }
      return c;
    }
  }

  private boolean fresh(List<NodeHealth> nodes) {
    return nodes.stream()
        .allMatch(
            n ->
                n.state() == NodeHealth.State.UP
                    && n.sinceLastAnswer().map(d -> d.compareTo(probeAfter) <= 0).orElse(false));
  }

  /** One attempt on the probe resource: refreshes every node's state. */
  private void lockProbeResource() {
    Duration quarantine = redlock.settings().restartQuarantine();
    Duration ttl =
        quarantine != null && quarantine.compareTo(PROBE_TTL) < 0 ? quarantine : PROBE_TTL;
    try {
      Lease lease = redlock.acquire(probeResource, ttl, Duration.ZERO);
      lease.release();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RedlockException | IllegalArgumentException | IllegalStateException e) {
      // held elsewhere, nodes unreachable, or closed: the node states say which
    }
  }

  /** Adds the probe's findings to the per-node details; returns the warnings. */
  private static List<String> report(
      List<NodeReport> reports,
      Duration age,
      Map<String, Map<String, Object>> perNode,
      RedlockSettings settings,
      int quorum) {
    List<String> clockOff = new ArrayList<>();
    List<String> notDurable = new ArrayList<>();
    List<String> active = new ArrayList<>();
    List<Duration> activeLeft = new ArrayList<>();
    List<String> unreadable = new ArrayList<>();
    int voters = 0;
    for (NodeReport r : reports) {
      String name = r.node();
      Map<String, Object> d = perNode.computeIfAbsent(name, k -> new LinkedHashMap<>());
      r.clockOffset()
          .ifPresent(
              offset -> {
                Duration uncertainty = r.clockUncertainty().orElse(Duration.ZERO);
                d.put("clockOffsetMs", millis(offset));
                d.put("clockOffsetUncertaintyMs", millis(uncertainty));
                if (r.clockNote().isEmpty()
                    && offset.abs().minus(uncertainty).compareTo(CLOCK_OFFSET_LIMIT) > 0) {
                  clockOff.add(name + " (" + describeOffset(offset, uncertainty) + ")");
                }
              });
      r.clockNote().ifPresent(note -> d.put("clockNote", note));
      r.clockError().ifPresent(e -> d.put("clockError", e));
      NodeStatus s = r.status().orElse(null);
      if (s != null) {
        d.put("durable", s.durable());
        d.put("incarnation", NodeUri.redact(s.incarnation()));
        // the status is as old as the probe: the store has been up that much longer since
        d.put("uptimeSeconds", s.uptime().plus(age).toSeconds());
      }
      r.statusError().ifPresent(e -> d.put("statusError", e));
      Quarantine q = r.quarantine();
      Duration left = r.quarantineLeft().map(l -> l.minus(age)).orElse(Duration.ZERO);
      if (q == Quarantine.ACTIVE && !left.isNegative() && !left.isZero()) {
        d.put("quarantineLeftMs", left.toMillis());
        active.add(name + " (up " + format(s.uptime().plus(age)) + ")");
        activeLeft.add(left);
      } else if (q == Quarantine.ACTIVE) {
        q = Quarantine.PASSED; // it passed since the probe
      } else if (q == Quarantine.OFF) {
        String why = s.details().get("durability");
        notDurable.add(
            why == null || why.isBlank()
                ? name
                : name + " (" + NodeUri.redact(why.replaceFirst("^not durable: ", "")) + ")");
      } else if (q == Quarantine.STATUS_UNREADABLE) {
        unreadable.add(name);
      }
      d.put("quarantine", q.label());
      boolean answers = r.reachable() && !"DOWN".equals(d.get("state"));
      if (answers && q != Quarantine.ACTIVE && q != Quarantine.STATUS_UNREADABLE) {
        voters++;
      }
    }
    List<String> warnings = new ArrayList<>();
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
      Duration maxTtl = settings.restartQuarantine();
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
              + format(maxTtl.plus(settings.driftFor(maxTtl)))
              + ", the maximum TTL plus drift): "
              + String.join(", ", active)
              + consequence);
    }
    if (!unreadable.isEmpty()) {
      warnings.add(
          "status could not be read, so under restart quarantine their votes do not count: "
              + String.join(", ", unreadable));
    }
    return warnings;
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
