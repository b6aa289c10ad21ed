package io.redlock.engine.internal;

import io.redlock.NodeFailure;
import io.redlock.ReleaseOutcome;
import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The nodes of one Redlock and what every call on them shares: their names, the majority, the
 * {@link FanOut} with its {@link NodeStates}, and the Redlock's {@link Scheduler}. Release lives
 * here because acquisition (after a failed attempt) and the lease both need it.
 */
final class Quorum {
  private static final Logger LOG = LoggerFactory.getLogger(Quorum.class);

  final LockNode[] nodes;
  final String[] names;
  final List<String> nameList;
  final int quorum;
  final Ticker ticker;
  final NodeStates states;
  final FanOut fanOut;
  final Scheduler scheduler;

  final Listening listening;

  Quorum(
      LockNode[] nodes, String[] names, Ticker ticker, Listening listening, Scheduler scheduler) {
    this.scheduler = scheduler;
    this.listening = listening;
    this.nodes = nodes;
    this.names = names;
    this.nameList = List.of(names);
    this.quorum = nodes.length / 2 + 1;
    this.ticker = ticker;
    this.states = new NodeStates(names, ticker);
    this.fanOut = new FanOut(names, states, ticker, listening);
  }

  int size() {
    return nodes.length;
  }

  /**
   * Compare-and-delete on every node, awaited against one deadline. Never throws because of a node.
   */
  ReleaseOutcome releaseAll(String resource, String token, long nodeTimeoutNanos) {
    return releaseAll(resource, token, nodeTimeoutNanos, null, null);
  }

  /**
   * Like {@link #releaseAll(String, String, long)}, on the nodes {@code only} marks (all if null),
   * telling {@code lease} of the calls it gives up on (if not null).
   */
  ReleaseOutcome releaseAll(
      String resource, String token, long nodeTimeoutNanos, boolean[] only, QuorumLease lease) {
    Release release = new Release(resource, token, only, lease);
    fanOut.run("release", release, ticker.read() + nodeTimeoutNanos);
    return new ReleaseOutcome(
        release.deleted, release.answered, nodes.length, inNodeOrder(release.failed));
  }

  /** The release of one key on every node: counts who deleted, who answered, who failed. */
  private final class Release implements FanOut.Policy<Boolean> {
    private final String resource;
    private final String token;
    private final boolean[] only;
    private final QuorumLease lease;
    int deleted;
    int answered;
    List<String> failed;

    Release(String resource, String token, boolean[] only, QuorumLease lease) {
      this.resource = resource;
      this.token = token;
      this.only = only;
      this.lease = lease;
    }

    @Override
    public io.redlock.spi.Reply<Boolean> start(int node) {
      return only == null || only[node] ? nodes[node].release(resource, token) : null;
    }

    @Override
    public void abandoned(int node) {
      if (lease != null) {
        lease.lateCalls().abandoned(node, false);
      }
    }

    @Override
    public void ended(int node, Boolean late) {
      if (lease != null) {
        lease.lateCalls().ended(node);
      }
    }

    @Override
    public void answered(int node, Boolean answer) {
      answered++;
      if (Boolean.TRUE.equals(answer)) {
        deleted++;
      }
    }

    @Override
    public void failed(int node, RuntimeException failure) {
      if (failed == null) {
        failed = new ArrayList<>(4);
      }
      failed.add(names[node]);
    }
  }

  /**
   * Releases {@code resource} on one node, as a {@link Scheduler#chore}: for a grant that arrived
   * after its acquisition had given up on it. Sent only once the node has answered the acquire, so
   * the acquire cannot overtake it.
   */
  void releaseLate(int node, String resource, String token, long nodeTimeoutNanos, Runnable done) {
    boolean queued =
        scheduler.chore(
            "releasing a late grant of '" + resource + "' on " + names[node],
            () -> {
              try {
                boolean[] only = new boolean[nodes.length];
                only[node] = true;
                Release release = new Release(resource, token, only, null);
                fanOut.run("late release", release, ticker.read() + nodeTimeoutNanos);
                LOG.debug("{}: late grant of '{}' released", names[node], resource);
              } finally {
                done.run();
              }
            });
    if (!queued) {
      done.run();
    }
  }

  /** Names of the nodes marked in {@code which}, but for those in {@code except}. */
  List<String> namesOf(boolean[] which, List<String> except) {
    List<String> out = new ArrayList<>(which.length);
    for (int i = 0; i < which.length; i++) {
      if (which[i] && !except.contains(names[i])) {
        out.add(names[i]);
      }
    }
    return List.copyOf(out);
  }

  /** Failures in the order the nodes were given. */
  List<NodeFailure> sortedFailures(List<NodeFailure> failures) {
    if (failures == null || failures.isEmpty()) {
      return List.of();
    }
    return failures.stream()
        .sorted(Comparator.comparingInt(f -> nameList.indexOf(f.node())))
        .toList();
  }

  /** Failed node names in the order the nodes were given. */
  List<String> inNodeOrder(List<String> failed) {
    if (failed == null || failed.isEmpty()) {
      return List.of();
    }
    List<String> sorted = new ArrayList<>(failed);
    sorted.sort(Comparator.comparingInt(nameList::indexOf));
    return sorted;
  }
}
