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
 * Redlock#probe}): {@code UP} when at least a quorum (N/2+1) of nodes is up, {@code DOWN} when more
 * than N - quorum are down, {@code UNKNOWN} otherwise (nodes not called yet). The node states are
 * the Redlock's own ({@link Redlock#health()}). With node checks on, every node is probed at most
 * once per {@code probeAfter} (lock calls on a random key, status, clock: all nodes at once within
 * {@code nodeCheckTimeout}) and the reports kept that long; between probes, states that are not
 * fresh (a node not up, or silent for {@code probeAfter}) are refreshed by one lock attempt on the
 * probe resource, if one is set. The details and warnings (which never change the status) are
 * listed in the starter's README.
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
                  clockOff.add(
                      String.format(
                          Locale.ROOT,
                          "%s (store %.3f ms %s ± %.3f ms)",
                          name,
                          millis(offset.abs()),
                          offset.isNegative() ? "behind" : "ahead",
                          millis(uncertainty)));
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
        active.add(name + " (" + left.toMillis() + " ms left)");
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
          "store clock not synchronised with this machine's (more than 1 s off, the limit of"
              + " redlock doctor): "
              + String.join(", ", clockOff)
              + ". A correction that steps such a clock moves every expiry on that store at once:"
              + " enable NTP (chrony, ntpd or systemd-timesyncd), set to slew, not step");
    }
    if (!notDurable.isEmpty()) {
      warnings.add(
          "not durable, and restart quarantine is off: "
              + String.join(", ", notDurable)
              + ". Such a node forgets the locks it granted when it restarts, and could then help a"
              + " second client to a majority. Make it durable (Redis: appendonly yes with"
              + " appendfsync always; PostgreSQL: fsync and synchronous_commit on), or set"
              + " redlock.restart-quarantine to the longest lock TTL in use");
    }
    if (!active.isEmpty()) {
      Duration maxTtl = settings.restartQuarantine();
      warnings.add(
          "in restart quarantine (not durable and up for less than "
              + maxTtl.plus(settings.driftFor(maxTtl)).toMillis()
              + " ms"
              + ", the maximum TTL plus drift), their votes do not count yet: "
              + String.join(", ", active)
              + (voters >= quorum
                  ? "; locks work with the " + voters + " nodes that vote"
                  : "; only "
                      + voters
                      + " nodes vote and a quorum needs "
                      + quorum
                      + ", so no lock can be acquired until then"));
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
}
