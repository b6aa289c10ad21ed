package io.redlock.engine.internal;

import io.redlock.LockTimeoutException;
import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockSettings;
import io.redlock.RedlockTransientException;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Acquisition with fencing tokens and restart quarantine, the two guarantees beyond the plain
 * algorithm; used only when the settings ask for one of them, so plain locks keep the one-round
 * path of {@link QuorumRedlock}.
 *
 * <h2>Fencing tokens that increase across any majorities</h2>
 *
 * <p>Every node keeps a counter per resource that survives release and expiry and never goes
 * backwards; a successful {@link LockNode#tryAcquireFenced} increments it atomically with the
 * insert. An acquisition takes the maximum {@code t} over the nodes that granted it, then writes it
 * back: {@link LockNode#raiseFence} on each of them raises its counter to at least {@code t} if the
 * key still holds this acquisition's token. The lease is granted only when a majority (of nodes
 * whose votes count) confirmed the write-back, and the validity is measured from the start of the
 * first round, so it includes the write-back.
 *
 * <p>Claim: if acquisition Y of a resource begins after acquisition X of it was granted, then
 * token(Y) &gt; token(X). X's write-back majority W and Y's granting majority G share a node m. X's
 * raise on m completed before X was granted, hence before Y began, hence before Y's increment on m;
 * m's counter never goes backwards, so Y's increment on m returns more than token(X), and token(Y),
 * a maximum that includes m's value, is greater still. Taking the maximum alone is not enough: with
 * nodes A..E, A at 10 and the others at 0, {A,B,C} gives 11 and then {C,D,E} would give 1; with the
 * write-back, C holds 11 and {C,D,E} gives 12.
 *
 * <p>"Never goes backwards" is the backend's part: durable stores keep the counter; a store that
 * can lose it (Redis without persistence) starts again from a floor no earlier value can exceed,
 * such as {@code max(counter + 1, server time in µs)}. That floor assumes the server's clock does
 * not go back across the restart and is not far behind the clocks of the nodes whose values were
 * written back to it; with restart quarantine on, a restarted node votes again only after the
 * maximum TTL, so its clock may lag the others by up to that much.
 *
 * <h2>Restart quarantine</h2>
 *
 * <p>A node that restarts without durable lock state forgets its locks and could help a second
 * client to a majority. With quarantine on, the engine reads the status of every node that granted,
 * after awaiting its vote ({@link LockNode#status()} must then describe the incarnation that voted,
 * or a later one), and counts the vote only if the node's lock state is durable or its incarnation
 * had been up for the maximum TTL plus the drift allowance when the vote was sent. Every lock the
 * node forgot was taken with at most the maximum TTL before its restart, so it has expired on every
 * node by then. A node whose status cannot be read does not count. Extensions are judged the same
 * way. Quarantined nodes are listed in the lease ({@link QuorumLease#quarantinedNodes()}), in the
 * failure message and in the log ({@link Incarnation}).
 */
final class Safety {
  private static final Logger LOG = LoggerFactory.getLogger(Safety.class);

  private final Quorum quorum;
  private final boolean fencing;

  /** The maximum TTL of restart quarantine, or null when it is off. */
  private final Duration maxTtl;

  private final Incarnation[] incarnations;

  private Safety(Quorum quorum, boolean fencing, Duration maxTtl, Incarnation[] incarnations) {
    this.quorum = quorum;
    this.fencing = fencing;
    this.maxTtl = maxTtl;
    this.incarnations = incarnations;
  }

  /**
   * The safety layer the settings ask for, or null if they ask for neither fencing nor quarantine.
   *
   * @throws RedlockNonTransientException if a node lacks the capability a setting needs
   */
  static Safety create(Quorum quorum, RedlockSettings settings) {
    boolean fencing = settings.fencing();
    Duration maxTtl = settings.restartQuarantine();
    if (fencing) {
      requireAll(
          quorum,
          n -> n.capabilities().fencing(),
          "fencing is on, but ",
          " no fencing counters (capabilities().fencing() is false): ",
          "; use backends that keep them for every node, or build without fencing(true)",
          "this node keeps",
          "these nodes keep");
    }
    if (maxTtl == null) {
      return fencing ? new Safety(quorum, true, null, null) : null;
    }
    requireAll(
        quorum,
        n -> n.capabilities().status(),
        "restart quarantine is on, but ",
        " not report a status (capabilities().status() is false), so a restart could not be"
            + " noticed: ",
        "; use backends that report one for every node, or build without restartQuarantine(...)",
        "this node does",
        "these nodes do");
    long ttlNanos = Timing.saturatedNanos(maxTtl);
    long driftNanos = Timing.saturatedNanos(settings.driftFor(maxTtl));
    // Saturate rather than wrap: a wrapped (negative) quarantine would silently never apply.
    long quarantineNanos =
        ttlNanos > Long.MAX_VALUE - driftNanos ? Long.MAX_VALUE : ttlNanos + driftNanos;
    Incarnation[] incarnations = new Incarnation[quorum.size()];
    for (int i = 0; i < incarnations.length; i++) {
      incarnations[i] = new Incarnation(quorum.names[i], quarantineNanos);
    }
    LOG.debug(
        "safety over {}: fencing {}, restart quarantine for a maximum TTL of {} ms",
        quorum.nameList,
        fencing ? "on" : "off",
        maxTtl.toMillis());
    return new Safety(quorum, fencing, maxTtl, incarnations);
  }

  private static void requireAll(
      Quorum quorum,
      Predicate<LockNode> capable,
      String before,
      String after,
      String advice,
      String one,
      String many) {
    List<String> missing = new ArrayList<>();
    for (int i = 0; i < quorum.size(); i++) {
      if (!capable.test(quorum.nodes[i])) {
        missing.add(quorum.names[i]);
      }
    }
    if (!missing.isEmpty()) {
      throw new RedlockNonTransientException(
          null,
          before + (missing.size() == 1 ? one : many) + after + String.join(", ", missing) + advice,
          null);
    }
  }

  boolean fencing() {
    return fencing;
  }

  boolean quarantine() {
    return incarnations != null;
  }

  /** With quarantine on, a lease may not outlive the maximum TTL the quarantine waits for. */
  void checkTtl(Duration ttl) {
    if (maxTtl != null && ttl.compareTo(maxTtl) > 0) {
      throw new IllegalArgumentException(
          "ttl "
              + ttl.toMillis()
              + " ms is longer than the maximum TTL of restart quarantine ("
              + maxTtl.toMillis()
              + " ms): a node restarted without persistence could vote again before this lock"
              + " expired; use a TTL of at most "
              + maxTtl.toMillis()
              + " ms, or raise restartQuarantine(...) to the longest TTL you use");
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Acquisition: the second round

  /**
   * The second round of an attempt whose first round ({@code votes}) had a majority of grants: the
   * quarantine judges each granting node's status, then the highest fencing counter is written back
   * to every granting node, against one deadline that never passes the validity. Sets the tally's
   * yes votes to those that count and, when the attempt fails here, why.
   *
   * @return whether the attempt may become a lease (the caller still checks the validity)
   */
  boolean confirm(Attempt votes, long start, long validUntil, long nodeTimeoutNanos, Tally tally) {
    int grants = tally.yes;
    if (grants < quorum.quorum || Thread.currentThread().isInterrupted()) {
      votes.abandonStatuses();
      return false;
    }
    long deadline = earlier(quorum.ticker.read() + nodeTimeoutNanos, validUntil);
    boolean[] counts = judgeAll(votes, deadline, start, tally);
    int counted = tally.yes;
    long fence = votes.fence();
    List<String> quarantined = new ArrayList<>(0);
    for (int i = 0; i < counts.length; i++) {
      if (votes.granted(i) && !counts[i]) {
        quarantined.add(quorum.names[i]);
      }
    }
    if (counted < quorum.quorum) {
      votes.failedBecause(
          LockTimeoutException.Reason.RESTART_QUARANTINE,
          quarantineMessage(grants, counted, quarantined, start));
      return false;
    }
    if (fencing) {
      int confirmed = raiseAll(votes, counts, fence, deadline, tally);
      if (confirmed < quorum.quorum) {
        votes.failedBecause(
            LockTimeoutException.Reason.FENCING_NOT_CONFIRMED,
            "acquired on "
                + counted
                + " of "
                + quorum.size()
                + " nodes, but only "
                + confirmed
                + " confirmed the fencing token "
                + fence
                + " in time (a quorum needs "
                + quorum.quorum
                + "); check the slow or failing nodes");
        return false;
      }
    }
    votes.lease().confirmed(fencing ? fence : 0, List.copyOf(quarantined));
    return true;
  }

  /** Which granting nodes' votes count; sets the tally's yes votes to their number. */
  private boolean[] judgeAll(Attempt votes, long deadline, long sentAt, Tally tally) {
    boolean[] counts = new boolean[quorum.size()];
    if (incarnations == null) {
      for (int i = 0; i < counts.length; i++) {
        counts[i] = votes.granted(i);
      }
      return counts;
    }
    tally.yes = 0;
    quorum.fanOut.run(
        "status",
        new Judge(votes::status, sentAt) {
          @Override
          void counted(int node) {
            counts[node] = true;
            tally.yes++;
          }
        },
        deadline);
    return counts;
  }

  /** Writes {@code fence} back to every granting node; returns how many counted nodes confirmed. */
  private int raiseAll(Attempt votes, boolean[] counts, long fence, long deadline, Tally tally) {
    String resource = votes.lease().resource();
    String token = votes.lease().token();
    int[] confirmed = {0};
    quorum.fanOut.run(
        "raiseFence",
        new FanOut.Policy<Boolean>() {
          @Override
          public Reply<Boolean> start(int node) {
            return votes.granted(node)
                ? quorum.nodes[node].raiseFence(resource, token, fence)
                : null;
          }

          @Override
          public void answered(int node, Boolean raised) {
            if (Boolean.TRUE.equals(raised) && counts[node]) {
              confirmed[0]++;
            }
          }

          @Override
          public void failed(int node, RuntimeException failure) {
            tally.fail(quorum.names[node], failure);
          }
        },
        deadline);
    return confirmed[0];
  }

  /** Asks {@code node} for its status, now; a failure to start becomes a failed reply. */
  Reply<NodeStatus> startStatus(int node) {
    try {
      return quorum.nodes[node].status();
    } catch (RuntimeException e) {
      return Reply.failed(
          e instanceof RedlockException r
              ? r
              : new RedlockTransientException(quorum.names[node], "status() failed: " + e, e));
    }
  }

  /**
   * Awaits status replies already asked for, and judges whether each node's vote, sent at {@code
   * sentAt}, counts.
   */
  private abstract class Judge implements FanOut.Policy<NodeStatus> {
    private final java.util.function.IntFunction<Reply<NodeStatus>> asked;
    private final long sentAt;

    Judge(java.util.function.IntFunction<Reply<NodeStatus>> asked, long sentAt) {
      this.asked = asked;
      this.sentAt = sentAt;
    }

    abstract void counted(int node);

    @Override
    public Reply<NodeStatus> start(int node) {
      return asked.apply(node);
    }

    @Override
    public void answered(int node, NodeStatus status) {
      if (status == null) {
        incarnations[node].statusFailed(new IllegalStateException("status() answered null"));
      } else if (incarnations[node].observe(status, quorum.ticker.read(), sentAt) <= 0) {
        counted(node);
      }
    }

    @Override
    public void failed(int node, RuntimeException failure) {
      incarnations[node].statusFailed(failure);
    }
  }

  private static long earlier(long a, long b) {
    return a - b < 0 ? a : b;
  }

  private String quarantineMessage(int grants, int counted, List<String> notCounted, long start) {
    List<String> reasons = new ArrayList<>(notCounted.size());
    for (String name : notCounted) {
      int i = quorum.nameList.indexOf(name);
      reasons.add(i >= 0 ? incarnations[i].whyNotCounted(start) : name);
    }
    return "acquired on "
        + grants
        + " of "
        + quorum.size()
        + " nodes, but only "
        + counted
        + " votes count (a quorum needs "
        + quorum.quorum
        + "): restart quarantine leaves out "
        + String.join(", ", reasons)
        + "; a node restarted without durable lock state votes again once it has been up for the"
        + " maximum TTL ("
        + maxTtl.toMillis()
        + " ms)";
  }

  // ---------------------------------------------------------------------------------------------
  // Extension

  /**
   * With quarantine on, the nodes that extended ({@code extended[i]}, their statuses asked right
   * after their yes) count only if their status passes; records the counted ones in {@code tally}.
   */
  void judgeExtension(Reply<NodeStatus>[] statuses, long deadline, long sentAt, Tally tally) {
    quorum.fanOut.run(
        "status",
        new Judge(i -> statuses[i], sentAt) {
          @Override
          void counted(int node) {
            tally.yes(quorum.quorum, quorum.ticker.read());
          }

          @Override
          public void answered(int node, NodeStatus status) {
            int before = tally.yes;
            super.answered(node, status);
            if (tally.yes == before) {
              tally.no++;
            }
          }

          @Override
          public void failed(int node, RuntimeException failure) {
            super.failed(node, failure);
            tally.no++;
          }
        },
        deadline);
  }
}
