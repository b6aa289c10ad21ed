package io.redlock.engine.internal;

import io.redlock.NodeFailure;
import io.redlock.NodesMisconfiguredException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockSettings;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the engine checks once, when it is built, by asking every node that reports a status for it
 * (waiting at most {@link #BOUND_NANOS}): that no two nodes are one server, and, with restart
 * quarantine off, that the nodes keep their locks durably (a WARN otherwise). A node that does not
 * answer in time is left out of both checks; it is not refused for being down.
 */
final class BuildChecks {
  private static final Logger LOG = LoggerFactory.getLogger(BuildChecks.class);

  /** How long the build waits for the statuses: a cold connection, not a slow node. */
  static final long BOUND_NANOS = 1_000_000_000L;

  private BuildChecks() {}

  /**
   * Runs the checks.
   *
   * @throws NodesMisconfiguredException if two nodes report the same incarnation: one server listed
   *     twice (two names for one host, two databases of one Redis), whose loss takes two votes
   */
  static void run(Quorum quorum, RedlockSettings settings) {
    if (quorum.size() < 2) {
      return; // one node: nothing to compare, and a restart loses the lock whatever is checked
    }
    NodeFailure[] misconfigured = new NodeFailure[quorum.size()];
    NodeStatus[] statuses = statuses(quorum, misconfigured);
    refuseMisconfigured(
        settings, java.util.Arrays.stream(misconfigured).filter(f -> f != null).toList());
    if (!settings.sharedServers()) {
      refuseSharedServers(quorum, statuses);
    }
    if (!settings.restartQuarantineEnabled()) {
      warnIfNotDurable(quorum, statuses);
    }
  }

  /**
   * With strict nodes, refuses nodes that answered the status probe with a failure no retry fixes
   * (a wrong password, an unknown host); without, logs them at WARN.
   */
  private static void refuseMisconfigured(RedlockSettings settings, List<NodeFailure> failures) {
    if (failures.isEmpty()) {
      return;
    }
    if (settings.strictNodes()) {
      throw new NodesMisconfiguredException(
          null,
          "strictNodes is on and "
              + (failures.size() == 1 ? "a node fails" : failures.size() + " nodes fail")
              + " in a way no retry fixes; fix "
              + (failures.size() == 1 ? "it" : "them")
              + ", or build with strictNodes(false) to let the others outvote "
              + (failures.size() == 1 ? "it" : "them"),
          failures);
    }
    LOG.warn(
        "strictNodes is off and {} in a way no retry fixes; the others outvote it, so the quorum"
            + " has lost some of its fault tolerance until it is fixed: {}",
        failures.size() == 1 ? "a node fails" : failures.size() + " nodes fail",
        failures);
  }

  private static NodeStatus[] statuses(Quorum quorum, NodeFailure[] misconfigured) {
    NodeStatus[] statuses = new NodeStatus[quorum.size()];
    quorum.fanOut.run(
        "status",
        new FanOut.Policy<NodeStatus>() {
          @Override
          public Reply<NodeStatus> start(int node) {
            LockNode n = quorum.nodes[node];
            return n.capabilities().status() ? n.status() : null;
          }

          @Override
          public void answered(int node, NodeStatus status) {
            statuses[node] = status;
          }

          @Override
          public void failed(int node, RuntimeException failure) {
            NodeFailure f = new NodeFailure(quorum.names[node], failure);
            if (f.isTransient()) {
              LOG.debug("{}: no status at build: {}", quorum.names[node], failure.toString());
            } else {
              misconfigured[node] = f;
            }
          }
        },
        quorum.ticker.read() + BOUND_NANOS);
    return statuses;
  }

  private static void refuseSharedServers(Quorum quorum, NodeStatus[] statuses) {
    Map<String, List<Integer>> byIncarnation = new LinkedHashMap<>();
    for (int i = 0; i < statuses.length; i++) {
      if (statuses[i] != null) {
        byIncarnation.computeIfAbsent(statuses[i].incarnation(), k -> new ArrayList<>()).add(i);
      }
    }
    List<NodeFailure> failures = new ArrayList<>();
    for (Map.Entry<String, List<Integer>> e : byIncarnation.entrySet()) {
      if (e.getValue().size() > 1) {
        List<String> names = e.getValue().stream().map(i -> quorum.names[i]).toList();
        for (String name : names) {
          String others = String.join(", ", names.stream().filter(n -> !n.equals(name)).toList());
          failures.add(
              new NodeFailure(
                  name,
                  new RedlockNonTransientException(
                      name,
                      "one server with " + others + " (incarnation " + e.getKey() + ")",
                      null)));
        }
      }
    }
    if (!failures.isEmpty()) {
      throw new NodesMisconfiguredException(
          null,
          "some nodes are one server listed twice (they report the same incarnation), so its"
              + " loss would take several votes at once; point every node at a separate server"
              + " (allowSharedServers() lets a test or a demo run so)",
          failures);
    }
  }

  private static void warnIfNotDurable(Quorum quorum, NodeStatus[] statuses) {
    List<String> notDurable = new ArrayList<>();
    int answered = 0;
    for (int i = 0; i < statuses.length; i++) {
      if (statuses[i] != null) {
        answered++;
        if (!statuses[i].durable()) {
          notDurable.add(quorum.names[i]);
        }
      }
    }
    if (!notDurable.isEmpty()) {
      LOG.warn(
          "restart quarantine is off and {} of the {} nodes that answered keep their locks in"
              + " memory only: {}. If one of them crashes and restarts empty, a second client can"
              + " be granted a lock the first still holds. Build with restartQuarantine(<your"
              + " longest TTL>), or make the nodes durable (Redis: appendonly yes, appendfsync"
              + " always)",
          notDurable.size(),
          answered,
          String.join(", ", notDurable));
    }
  }
}
