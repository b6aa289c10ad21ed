package io.redlock.cli.internal;

import io.redlock.cli.internal.DoctorReport.NodeReport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Judges the Redlock timing assumptions against measured round trips: a quorum must be reachable, a
 * majority of nodes must answer well within the per-node timeout, and the node timeout plus the
 * drift allowance must leave most of the TTL as validity. Then durability and restarts: a node that
 * restarts without durable lock state forgets its locks, which restart quarantine covers.
 */
final class Verdict {
  enum Level {
    OK,
    INFO,
    WARN,
    FAIL
  }

  /** What a finding is about; lets the doctor pick its exit code and scripts filter the JSON. */
  enum Topic {
    REACHABILITY,
    TIMING,
    NODE_COUNT,
    DURABILITY,
    QUARANTINE,
    /** --quarantine given, but a node cannot report its status. */
    QUARANTINE_SUPPORT,
    FENCING,
    /** A store's clock is far from this machine's, or unknown. */
    CLOCK,
    /** Two or more nodes report the same incarnation: one server listed more than once. */
    SAME_SERVER,
    /**
     * Nodes fail in a way no retry fixes (a wrong password, a missing table, an unknown host, a
     * refused TLS handshake), as the engine classifies them: exec exits with 78 on them.
     */
    MISCONFIGURED,
    SETUP
  }

  /** One statement about the configuration. */
  record Finding(Level level, Topic topic, String message) {}

  /** A finding whose message is {@code format} with {@code args}. */
  static Finding finding(Level level, Topic topic, String format, Object... args) {
    return new Finding(level, topic, format.formatted(args));
  }

  /** {@code before}, the items joined with ", ", and {@code after}; empty for no items. */
  static String list(String before, List<String> items, String after) {
    return items.isEmpty() ? "" : before + String.join(", ", items) + after;
  }

  private Verdict() {}

  /**
   * The findings, worst first within each topic.
   *
   * @param quarantine restart quarantine, or null when it is off
   * @param misconfigured nodes the engine found failing in a way no retry fixes: not counted as
   *     reachable, and not called merely unreachable (the {@link Topic#MISCONFIGURED} finding names
   *     them with their causes)
   */
  static List<Finding> judge(
      List<NodeReport> nodes,
      Duration ttl,
      Duration nodeTimeout,
      Duration drift,
      boolean local,
      Restarts.Quarantine quarantine,
      Set<String> misconfigured) {
    List<Finding> out = new ArrayList<>();
    int n = nodes.size();
    int quorum = n / 2 + 1;
    List<String> down = new ArrayList<>();
    List<String> slow = new ArrayList<>();
    List<String> tight = new ArrayList<>();
    int fast = 0;
    Duration worst = Duration.ZERO;
    List<String> broken = new ArrayList<>();
    for (NodeReport node : nodes) {
      if (misconfigured.contains(node.node())) {
        broken.add(node.node());
        continue;
      }
      if (!node.reachable()) {
        down.add(node.node());
        continue;
      }
      Duration rtt = node.worstRtt();
      if (rtt.compareTo(worst) > 0) {
        worst = rtt;
      }
      if (rtt.compareTo(nodeTimeout) >= 0) {
        slow.add(node.node() + " (worst " + Durations.format(rtt) + ")");
      } else {
        fast++;
        if (rtt.multipliedBy(2).compareTo(nodeTimeout) >= 0) {
          tight.add(node.node() + " (worst " + Durations.format(rtt) + ")");
        }
      }
    }
    int reachable = n - down.size() - broken.size();
    if (reachable < quorum) {
      out.add(
          finding(
              Level.FAIL,
              Topic.REACHABILITY,
              "only %d of %d nodes are reachable and a quorum needs %d: no lock can be acquired.%s%s",
              reachable,
              n,
              quorum,
              list(" Unreachable: ", down, "."),
              list(" Misconfigured: ", broken, ".")));
    } else if (!down.isEmpty()) {
      out.add(
          finding(
              Level.WARN,
              Topic.REACHABILITY,
              "unreachable: %s. Locks still work with %d of %d nodes, but %d more failure(s) would"
                  + " stop them",
              String.join(", ", down),
              reachable,
              n,
              reachable - quorum));
    }
    String timeout = Durations.format(nodeTimeout);
    if (reachable >= quorum && fast < quorum) {
      out.add(
          finding(
              Level.FAIL,
              Topic.TIMING,
              "only %d of %d nodes answered every probe within the per-node timeout of %s; a quorum"
                  + " needs %d. Raise --node-timeout above %s (and the TTL with it) or bring the"
                  + " nodes closer. Slow: %s",
              fast,
              n,
              timeout,
              quorum,
              Durations.format(worst.multipliedBy(2)),
              String.join(", ", slow)));
    } else if (!slow.isEmpty()) {
      out.add(
          finding(
              Level.WARN,
              Topic.TIMING,
              "slower than the per-node timeout of %s, so their votes will often be lost: %s",
              timeout,
              String.join(", ", slow)));
    }
    if (!tight.isEmpty()) {
      out.add(
          finding(
              Level.WARN,
              Topic.TIMING,
              "worst round trip above half the per-node timeout of %s (little headroom): %s",
              timeout,
              String.join(", ", tight)));
    }
    Duration spent = nodeTimeout.plus(drift);
    String t = Durations.format(ttl);
    String d = Durations.format(drift);
    if (spent.compareTo(ttl) >= 0) {
      out.add(
          finding(
              Level.FAIL,
              Topic.TIMING,
              "the per-node timeout (%s) plus the drift allowance (%s) reach the TTL (%s): a lease"
                  + " could be granted with no validity. Use a longer --ttl",
              timeout,
              d,
              t));
    } else if (nodeTimeout.multipliedBy(10).compareTo(ttl) > 0) {
      out.add(
          finding(
              Level.WARN,
              Topic.TIMING,
              "the per-node timeout (%s) is more than a tenth of the TTL (%s); the algorithm wants"
                  + " it small against the TTL (e.g. 5-50 ms for 10 s)",
              timeout,
              t));
    } else {
      out.add(
          finding(
              Level.OK,
              Topic.TIMING,
              "validity after a slowest-case acquisition is at least %s of the %s TTL (TTL - node"
                  + " timeout %s - drift %s)",
              Durations.format(ttl.minus(spent)),
              t,
              timeout,
              d));
    }
    Restarts.judge(out, nodes, ttl, quorum, quarantine);
    List<String> noFencing = new ArrayList<>();
    for (NodeReport node : nodes) {
      if (node.reachable() && Boolean.FALSE.equals(node.fencing())) {
        noFencing.add(node.node());
      }
    }
    clock(out, nodes);
    if (!noFencing.isEmpty()) {
      out.add(
          finding(
              Level.INFO,
              Topic.FENCING,
              "no fencing counters on %s: exec --fencing (and fencing(true) in code) will refuse %s",
              String.join(", ", noFencing),
              noFencing.size() == 1 ? "this node" : "these nodes"));
    }
    nodeCount(n).ifPresent(w -> out.add(new Finding(Level.WARN, Topic.NODE_COUNT, w)));
    if (local) {
      out.add(
          finding(
              Level.INFO,
              Topic.SETUP,
              "zero-setup default: all nodes are SQLite files on this machine, so locks exclude"
                  + " processes on this machine only; use --nodes or REDLOCK_NODES for a"
                  + " distributed lock"));
    }
    return out;
  }

  /** Beyond this, a store's clock counts as not synchronised with this machine's. */
  static final Duration CLOCK_OFFSET_LIMIT = Duration.ofSeconds(1);

  /**
   * Clock offsets: Redlock times every lock on each store's own clock from a relative TTL, so
   * clocks only need to advance at the same rate. But a store whose clock is far from this
   * machine's is not kept in step with it, and the correction that comes later (an NTP daemon or an
   * admin <em>stepping</em> the clock) moves every expiry on that store at once: a forward step
   * shortens every lock it holds.
   */
  private static void clock(List<Finding> out, List<NodeReport> nodes) {
    List<String> off = new ArrayList<>();
    List<String> blind = new ArrayList<>();
    Set<Boolean> aheadSides = new HashSet<>();
    int remote = 0;
    String largest = null;
    Duration largestOffset = Duration.ZERO;
    for (NodeReport node : nodes) {
      if (!node.reachable()) {
        continue;
      }
      if (Boolean.FALSE.equals(node.readsClock())) {
        blind.add(node.node());
        continue;
      }
      if (node.clockOffset() == null || node.localClock()) {
        continue; // failed (reported with the node) or this machine's own clock
      }
      remote++;
      Duration abs = node.clockOffset().abs();
      Duration uncertainty =
          node.clockUncertainty() == null ? Duration.ZERO : node.clockUncertainty();
      if (abs.compareTo(CLOCK_OFFSET_LIMIT) > 0
          && abs.minus(uncertainty).compareTo(CLOCK_OFFSET_LIMIT) > 0) {
        off.add(node.node() + " (" + describeOffset(node.clockOffset(), uncertainty) + ")");
        aheadSides.add(!node.clockOffset().isNegative());
      }
      if (abs.compareTo(largestOffset) >= 0) {
        largestOffset = abs;
        largest = node.node() + " (" + describeOffset(node.clockOffset(), uncertainty) + ")";
      }
    }
    if (!off.isEmpty()) {
      out.add(
          finding(
              Level.WARN,
              Topic.CLOCK,
              "store clock not synchronised with this machine's: %s. Redlock itself needs only"
                  + " clock rates to agree, but a clock this far off will be corrected some day,"
                  + " and a correction that steps the clock moves every expiry on that store at"
                  + " once (a forward step shortens every lock it holds). Enable NTP (chrony, ntpd"
                  + " or systemd-timesyncd) on %s%s; steps vs slews: configure it to slew, not"
                  + " step, once running (chrony: makestep only at boot; ntpd: -x)",
              String.join(", ", off),
              off.size() == 1 ? "that host" : "those hosts",
              off.size() == remote && remote > 1 && aheadSides.size() == 1
                  ? " (or on this machine: every store is off the same way, so this machine's"
                      + " clock may be the one that is off)"
                  : ""));
    } else if (remote > 0) {
      out.add(
          finding(
              Level.OK,
              Topic.CLOCK,
              "store clocks are within %s of this machine's (largest offset: %s)",
              Durations.format(CLOCK_OFFSET_LIMIT),
              largest));
    }
    if (!blind.isEmpty()) {
      out.add(
          finding(
              Level.INFO,
              Topic.CLOCK,
              "clock offset unknown (the backend does not read the store's clock): %s",
              String.join(", ", blind)));
    }
  }

  /**
   * Nodes that report the same incarnation (Redis run_id, PostgreSQL's start time and system
   * identifier...) are one server, listed twice: as 127.0.0.1 and localhost, or as databases /0 and
   * /1 of one Redis. Their votes fail together, so the quorum tolerates fewer failures than its
   * node count says.
   *
   * @param incarnations each reachable node's incarnation, by node name, in node order
   */
  static Optional<Finding> sameServer(Map<String, String> incarnations) {
    Map<String, List<String>> byIncarnation = new LinkedHashMap<>();
    incarnations.forEach(
        (node, incarnation) ->
            byIncarnation.computeIfAbsent(incarnation, k -> new ArrayList<>()).add(node));
    List<String> groups = new ArrayList<>();
    int servers = 0;
    for (List<String> nodes : byIncarnation.values()) {
      servers++;
      if (nodes.size() > 1) {
        groups.add(String.join(" and ", nodes));
      }
    }
    if (groups.isEmpty()) {
      return Optional.empty();
    }
    int n = incarnations.size();
    return Optional.of(
        finding(
            Level.FAIL,
            Topic.SAME_SERVER,
            "some nodes are one server listed twice (they report the same incarnation), so its"
                + " loss would take several votes at once; point every node at a separate server"
                + " (exec refuses them, exit 78): %s. Their votes fail together, so these %d nodes"
                + " are only %d independent server%s; list each server once (a different host,"
                + " port or database on the same server is the same server), and use 3 or 5"
                + " independent ones",
            String.join("; ", groups),
            n,
            servers,
            servers == 1 ? "" : "s"));
  }

  /** E.g. "store 30.02 s ahead ± 212 µs", "store 1.5 ms behind ± 40 µs". */
  static String describeOffset(Duration offset, Duration uncertainty) {
    return "store %s %s ± %s"
        .formatted(
            Durations.format(offset.abs()),
            offset.isNegative() ? "behind" : "ahead",
            Durations.format(uncertainty));
  }

  /** The warning for a single node or an even number of nodes, which exec says too. */
  static Optional<String> nodeCount(int n) {
    if (n == 1) {
      return Optional.of("a single node is not fault tolerant: use 3 or 5 independent nodes");
    }
    return n % 2 == 0
        ? Optional.of(
            "%d nodes tolerate no more failures than %d do; use an odd number (3 or 5)"
                .formatted(n, n - 1))
        : Optional.empty();
  }

  static Level overall(List<Finding> findings) {
    Level worst = Level.OK;
    for (Finding f : findings) {
      if (f.level().compareTo(worst) > 0 && f.level() != Level.INFO) {
        worst = f.level();
      }
    }
    return worst;
  }
}
