package io.redlock.cli.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Judges the Redlock timing assumptions against measured round trips: a quorum must be reachable, a
 * majority of nodes must answer well within the per-node timeout, and the node timeout plus the
 * drift allowance must leave most of the TTL as validity.
 */
final class Verdict {
  enum Level {
    OK,
    INFO,
    WARN,
    FAIL
  }

  /** One statement about the configuration. */
  record Finding(Level level, String message) {}

  /**
   * What the verdict needs to know about one node.
   *
   * @param durable from the node's status report; null if it does not report one
   * @param uptime from the node's status report; null if it does not report one
   */
  record NodeFacts(
      String name, boolean reachable, Duration worstRtt, Boolean durable, Duration uptime) {
    NodeFacts(String name, boolean reachable, Duration worstRtt) {
      this(name, reachable, worstRtt, null, null);
    }
  }

  private Verdict() {}

  static List<Finding> judge(
      List<NodeFacts> nodes, Duration ttl, Duration nodeTimeout, Duration drift, boolean local) {
    List<Finding> out = new ArrayList<>();
    int n = nodes.size();
    int quorum = n / 2 + 1;
    List<String> down = new ArrayList<>();
    List<String> slow = new ArrayList<>();
    List<String> tight = new ArrayList<>();
    int fast = 0;
    Duration worst = Duration.ZERO;
    for (NodeFacts node : nodes) {
      if (!node.reachable()) {
        down.add(node.name());
        continue;
      }
      Duration rtt = node.worstRtt();
      if (rtt.compareTo(worst) > 0) {
        worst = rtt;
      }
      if (rtt.compareTo(nodeTimeout) >= 0) {
        slow.add(node.name() + " (worst " + Durations.format(rtt) + ")");
      } else {
        fast++;
        if (rtt.multipliedBy(2).compareTo(nodeTimeout) >= 0) {
          tight.add(node.name() + " (worst " + Durations.format(rtt) + ")");
        }
      }
    }
    int reachable = n - down.size();
    if (reachable < quorum) {
      out.add(
          new Finding(
              Level.FAIL,
              "only "
                  + reachable
                  + " of "
                  + n
                  + " nodes are reachable and a quorum needs "
                  + quorum
                  + ": no lock can be acquired. Unreachable: "
                  + String.join(", ", down)));
    } else if (!down.isEmpty()) {
      out.add(
          new Finding(
              Level.WARN,
              "unreachable: "
                  + String.join(", ", down)
                  + ". Locks still work with "
                  + reachable
                  + " of "
                  + n
                  + " nodes, but "
                  + (reachable - quorum)
                  + " more failure(s) would stop them"));
    }
    if (reachable >= quorum && fast < quorum) {
      out.add(
          new Finding(
              Level.FAIL,
              "only "
                  + fast
                  + " of "
                  + n
                  + " nodes answered every probe within the per-node timeout of "
                  + Durations.format(nodeTimeout)
                  + "; a quorum needs "
                  + quorum
                  + ". Raise --node-timeout above "
                  + Durations.format(worst.multipliedBy(2))
                  + " (and the TTL with it) or bring the nodes closer. Slow: "
                  + String.join(", ", slow)));
    } else if (!slow.isEmpty()) {
      out.add(
          new Finding(
              Level.WARN,
              "slower than the per-node timeout of "
                  + Durations.format(nodeTimeout)
                  + ", so their votes will often be lost: "
                  + String.join(", ", slow)));
    }
    if (!tight.isEmpty()) {
      out.add(
          new Finding(
              Level.WARN,
              "worst round trip above half the per-node timeout of "
                  + Durations.format(nodeTimeout)
                  + " (little headroom): "
                  + String.join(", ", tight)));
    }
    Duration spent = nodeTimeout.plus(drift);
    if (spent.compareTo(ttl) >= 0) {
      out.add(
          new Finding(
              Level.FAIL,
              "the per-node timeout ("
                  + Durations.format(nodeTimeout)
                  + ") plus the drift allowance ("
                  + Durations.format(drift)
                  + ") reach the TTL ("
                  + Durations.format(ttl)
                  + "): a lease could be granted with no validity. Use a longer --ttl"));
    } else if (nodeTimeout.multipliedBy(10).compareTo(ttl) > 0) {
      out.add(
          new Finding(
              Level.WARN,
              "the per-node timeout ("
                  + Durations.format(nodeTimeout)
                  + ") is more than a tenth of the TTL ("
                  + Durations.format(ttl)
                  + "); the algorithm wants it small against the TTL (e.g. 5-50 ms for 10 s)"));
    } else {
      out.add(
          new Finding(
              Level.OK,
              "validity after a slowest-case acquisition is at least "
                  + Durations.format(ttl.minus(spent))
                  + " of the "
                  + Durations.format(ttl)
                  + " TTL (TTL - node timeout "
                  + Durations.format(nodeTimeout)
                  + " - drift "
                  + Durations.format(drift)
                  + ")"));
    }
    List<String> volatileNodes = new ArrayList<>();
    List<String> young = new ArrayList<>();
    for (NodeFacts node : nodes) {
      if (node.reachable() && Boolean.FALSE.equals(node.durable())) {
        volatileNodes.add(node.name());
      }
      if (node.reachable() && node.uptime() != null && node.uptime().compareTo(ttl) < 0) {
        young.add(node.name() + " (up " + Durations.format(node.uptime()) + ")");
      }
    }
    if (!volatileNodes.isEmpty()) {
      out.add(
          new Finding(
              Level.WARN,
              "not durable, so a restart forgets the locks they granted: "
                  + String.join(", ", volatileNodes)
                  + ". Enable persistence (Redis: appendonly yes, appendfsync always) or keep a"
                  + " restarted node out of the quorum for one TTL"));
    }
    if (!young.isEmpty()) {
      out.add(
          new Finding(
              Level.WARN,
              "restarted less than one TTL ago: "
                  + String.join(", ", young)
                  + "; if they are not durable, a lock granted before the restart may be granted"
                  + " again"));
    }
    if (n == 1) {
      out.add(
          new Finding(
              Level.WARN, "a single node is not fault tolerant: use 3 or 5 independent nodes"));
    } else if (n % 2 == 0) {
      out.add(
          new Finding(
              Level.WARN,
              n
                  + " nodes tolerate no more failures than "
                  + (n - 1)
                  + " do; use an odd number (3 or 5)"));
    }
    if (local) {
      out.add(
          new Finding(
              Level.INFO,
              "zero-setup default: all nodes are SQLite files on this machine, so locks exclude"
                  + " processes on this machine only; use --nodes or REDLOCK_NODES for a"
                  + " distributed lock"));
    }
    return out;
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
