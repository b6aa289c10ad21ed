package io.redlock.engine.internal;

import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockSettings;
import io.redlock.spi.AcquireResult;
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
 * failure message and in the log ({@link NodeHealth}).
 */
final class Safety {
  private static final Logger LOG = LoggerFactory.getLogger(Safety.class);

  private final QuorumRedlock redlock;
  private final boolean fencing;

  /** The maximum TTL of restart quarantine, or null when it is off. */
  private final Duration maxTtl;

  /** One per node when quarantine is on, else null. */
  private final NodeHealth[] health;

  private Safety(QuorumRedlock redlock, boolean fencing, Duration maxTtl, NodeHealth[] health) {
    this.redlock = redlock;
    this.fencing = fencing;
    this.maxTtl = maxTtl;
    this.health = health;
  }

  /**
   * The safety layer the settings ask for, or null if they ask for neither fencing nor quarantine.
   *
   * @throws RedlockNonTransientException if a node lacks the capability a setting needs
   */
  static Safety create(QuorumRedlock redlock) {
    RedlockSettings settings = redlock.settings;
    boolean fencing = settings.fencing();
    Duration maxTtl = settings.restartQuarantine();
    if (!fencing && maxTtl == null) {
      return null;
    }
    LockNode[] nodes = redlock.nodes;
    if (fencing) {
      List<String> missing = missing(redlock, n -> n.capabilities().fencing());
      if (!missing.isEmpty()) {
        throw new RedlockNonTransientException(
            null,
            "fencing is on, but "
                + (missing.size() == 1 ? "this node keeps" : "these nodes keep")
                + " no fencing counters (capabilities().fencing() is false): "
                + String.join(", ", missing)
                + "; use backends that keep them for every node, or build without fencing(true)",
            null);
      }
    }
    NodeHealth[] health = null;
    if (maxTtl != null) {
      List<String> missing = missing(redlock, n -> n.capabilities().status());
      if (!missing.isEmpty()) {
        throw new RedlockNonTransientException(
            null,
            "restart quarantine is on, but "
                + (missing.size() == 1 ? "this node does" : "these nodes do")
                + " not report a status (capabilities().status() is false), so a restart could"
                + " not be noticed: "
                + String.join(", ", missing)
                + "; use backends that report one for every node, or build without"
                + " restartQuarantine(...)",
            null);
      }
      long ttlNanos = QuorumRedlock.saturatedNanos(maxTtl);
      long driftNanos = QuorumRedlock.saturatedNanos(settings.driftFor(maxTtl));
      // Saturate rather than wrap: a wrapped (negative) quarantine would silently never apply.
      long quarantineNanos =
          ttlNanos > Long.MAX_VALUE - driftNanos ? Long.MAX_VALUE : ttlNanos + driftNanos;
      health = new NodeHealth[nodes.length];
      for (int i = 0; i < nodes.length; i++) {
        health[i] = new NodeHealth(redlock.names[i], quarantineNanos);
      }
    }
    LOG.debug(
        "safety over {}: fencing {}, restart quarantine {}",
        redlock.nodes(),
        fencing ? "on" : "off",
        maxTtl == null ? "off" : "for a maximum TTL of " + maxTtl.toMillis() + " ms");
    return new Safety(redlock, fencing, maxTtl, health);
  }

  private static List<String> missing(QuorumRedlock redlock, Predicate<LockNode> capable) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < redlock.nodes.length; i++) {
      if (!capable.test(redlock.nodes[i])) {
        out.add(redlock.names[i]);
      }
    }
    return out;
  }

  boolean quarantine() {
    return health != null;
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
  // Acquisition

  /**
   * One attempt: the conditional insert on every node (fenced if asked), then, in one second round
   * against one deadline, the write-back of the fence to every granting node and the status of
   * every granting node. Returns the lease, or null after releasing on every node.
   */
  QuorumLease attempt(
      String resource,
      Duration ttl,
      long ttlNanos,
      long driftNanos,
      long nodeTimeoutNanos,
      Tally tally) {
    tally.reset();
    LockNode[] nodes = redlock.nodes;
    int n = nodes.length;
    String token = QuorumRedlock.newToken();
    long start = redlock.ticker.read();
    QuorumLease lease = new QuorumLease(redlock, resource, token, ttl);
    @SuppressWarnings({"unchecked", "rawtypes"}) // generic array creation
    Reply<AcquireResult>[] replies = new Reply[n];
    String operation = fencing ? "tryAcquireFenced" : "tryAcquire";
    int[] order = redlock.fanOutOrder.current();
    boolean sampled = redlock.fanOutOrder.sampleNext();
    Reply.beginFanOut();
    try {
      for (int k = 0; k < n; k++) {
        int i = order[k];
        try {
          replies[i] =
              fencing
                  ? nodes[i].tryAcquireFenced(resource, token, ttl)
                  : nodes[i].tryAcquire(resource, token, ttl);
        } catch (IllegalArgumentException e) {
          lease.markDone();
          for (int j = 0; j < n; j++) {
            if (replies[j] != null) {
              redlock.abandonAcquire(replies[j], lease, j);
            }
          }
          throw e;
        } catch (RuntimeException e) {
          redlock.nodeFailed(tally, i, operation, e);
        }
      }
    } catch (Throwable t) {
      Reply.dispatchDeferred(); // nobody will await it now: it runs as a queued call would
      throw t;
    } finally {
      Reply.endFanOut();
    }

    // Round 1: the votes. The status of a granting node is asked right after its vote was awaited,
    // so that it describes the incarnation that voted (or a later one).
    long deadline = start + nodeTimeoutNanos;
    boolean[] granted = new boolean[n];
    @SuppressWarnings({"unchecked", "rawtypes"}) // generic array creation
    Reply<NodeStatus>[] statuses = health == null ? null : new Reply[n];
    int grants = 0;
    long fence = 0;
    try {
      for (int step = 0; step < 2 * n; step++) {
        int i = order[step % n];
        Reply<AcquireResult> reply = QuorumRedlock.takeInAwaitOrder(replies, order, step);
        if (reply == null) {
          continue;
        }
        long since = sampled ? redlock.ticker.read() : 0;
        try {
          AcquireResult result = reply.await(redlock.remaining(deadline));
          redlock.waited(sampled, i, since);
          if (result.acquired() && fencing && result.fence() <= 0) {
            // A backend bug; its key is ours and is released with the others.
            redlock.nodeFailed(
                tally,
                i,
                operation,
                new RedlockNonTransientException(
                    redlock.names[i],
                    "tryAcquireFenced answered acquired without a fencing counter; the backend must"
                        + " answer AcquireResult.acquired(counter)",
                    null));
          } else if (result.acquired()) {
            granted[i] = true;
            grants++;
            fence = Math.max(fence, result.fence());
            if (statuses != null) {
              statuses[i] = startStatus(i);
            }
          } else {
            tally.no(i);
          }
        } catch (RuntimeException e) {
          redlock.notAnswered(sampled, i, since, e);
          redlock.nodeFailed(tally, i, operation, e);
          if (QuorumRedlock.stillPending(e)) {
            redlock.abandonAcquire(reply, lease, i);
          }
        }
      }
      redlock.measured(sampled);
    } finally {
      Reply.dispatchDeferred(); // after an exception too: it must run
    }
    long validUntil = start + ttlNanos - driftNanos;
    boolean fenced = true;
    int counted = grants;
    List<String> quarantined = List.of();
    if (grants >= redlock.quorum && !Thread.currentThread().isInterrupted()) {
      // Round 2: write the fence back and collect the statuses, against one deadline that never
      // passes the validity.
      long round2 = redlock.ticker.read();
      long deadline2 = earlier(round2 + nodeTimeoutNanos, validUntil);
      @SuppressWarnings({"unchecked", "rawtypes"}) // generic array creation
      Reply<Boolean>[] raises = fencing ? new Reply[n] : null;
      if (fencing) {
        for (int i = 0; i < n; i++) {
          if (granted[i]) {
            try {
              raises[i] = nodes[i].raiseFence(resource, token, fence);
            } catch (RuntimeException e) {
              redlock.nodeFailed(tally, i, "raiseFence", e);
            }
          }
        }
      }
      boolean[] counts = granted;
      if (statuses != null) {
        counts = new boolean[n];
        counted = 0;
        List<String> out = null;
        for (int i = 0; i < n; i++) {
          if (granted[i]) {
            if (judge(i, statuses[i], deadline2, start)) {
              counts[i] = true;
              counted++;
            } else {
              if (out == null) {
                out = new ArrayList<>(2);
              }
              out.add(redlock.names[i]);
            }
          }
        }
        if (out != null) {
          quarantined = List.copyOf(out);
        }
      }
      if (fencing) {
        int confirmed = 0;
        for (int i = 0; i < n; i++) {
          Reply<Boolean> raise = raises[i];
          if (raise == null) {
            continue;
          }
          try {
            if (Boolean.TRUE.equals(raise.await(redlock.remaining(deadline2))) && counts[i]) {
              confirmed++;
            }
          } catch (RuntimeException e) {
            redlock.nodeFailed(tally, i, "raiseFence", e);
            if (QuorumRedlock.stillPending(e)) {
              redlock.abandonQuietly(raise, i);
            }
          }
        }
        fenced = confirmed >= redlock.quorum;
        if (!fenced && counted >= redlock.quorum) {
          tally.reason = io.redlock.LockTimeoutException.Reason.FENCING_NOT_CONFIRMED;
          tally.detail =
              "acquired on "
                  + counted
                  + " of "
                  + n
                  + " nodes, but only "
                  + confirmed
                  + " confirmed the fencing token "
                  + fence
                  + " in time (a quorum needs "
                  + redlock.quorum
                  + "); check the slow or failing nodes";
        }
      }
    } else if (statuses != null) {
      // No second round: the status replies already asked for are not needed.
      for (int i = 0; i < n; i++) {
        if (statuses[i] != null) {
          redlock.abandonQuietly(statuses[i], i);
        }
      }
    }
    tally.yes = counted;
    long end = redlock.ticker.read();
    tally.elapsedNanos = end - start;
    tally.validityNanos = ttlNanos - tally.elapsedNanos - driftNanos;
    if (counted < redlock.quorum && grants >= redlock.quorum) {
      tally.reason = io.redlock.LockTimeoutException.Reason.RESTART_QUARANTINE;
      tally.detail = quarantineMessage(grants, counted, quarantined, start);
    }
    if (counted >= redlock.quorum
        && fenced
        && tally.validityNanos >= redlock.minValidityNanos()
        && !Thread.currentThread().isInterrupted()) {
      lease.activate(validUntil, fencing ? fence : 0, quarantined);
      if (LOG.isDebugEnabled()) {
        LOG.debug(
            "locked '{}' on {} of {} nodes in {} µs, validity {} ms{}{}",
            resource,
            counted,
            n,
            tally.elapsedNanos / 1_000,
            tally.validityNanos / 1_000_000,
            fencing ? ", fencing token " + fence : "",
            quarantined.isEmpty() ? "" : ", not counted (restart quarantine): " + quarantined);
      }
      return lease;
    }
    lease.markDone();
    redlock.releaseAll(resource, token, nodeTimeoutNanos);
    if (LOG.isDebugEnabled()) {
      LOG.debug(
          "attempt on '{}' failed and was released: {}", resource, redlock.describe(tally, ttl));
    }
    return null;
  }

  private static long earlier(long a, long b) {
    return a - b < 0 ? a : b;
  }

  private Reply<NodeStatus> startStatus(int node) {
    try {
      return redlock.nodes[node].status();
    } catch (RuntimeException e) {
      return Reply.failed(
          e instanceof io.redlock.RedlockException r
              ? r
              : new io.redlock.RedlockTransientException(
                  redlock.names[node], "status() failed: " + e, e));
    }
  }

  /** Whether the vote of {@code node}, sent at {@code sentAt}, counts given its status reply. */
  private boolean judge(int node, Reply<NodeStatus> status, long deadline, long sentAt) {
    NodeStatus s;
    try {
      s = status.await(redlock.remaining(deadline));
    } catch (RuntimeException e) {
      health[node].statusFailed(e);
      if (QuorumRedlock.stillPending(e)) {
        redlock.abandonQuietly(status, node);
      }
      return false;
    }
    if (s == null) {
      health[node].statusFailed(new IllegalStateException("status() answered null"));
      return false;
    }
    return health[node].observe(s, redlock.ticker.read(), sentAt) <= 0;
  }

  private String quarantineMessage(int grants, int counted, List<String> notCounted, long start) {
    List<String> reasons = new ArrayList<>(notCounted.size());
    for (String name : notCounted) {
      int i = redlock.nodes().indexOf(name);
      reasons.add(i >= 0 ? health[i].whyNotCounted(start) : name);
    }
    return "acquired on "
        + grants
        + " of "
        + redlock.nodes.length
        + " nodes, but only "
        + counted
        + " votes count (a quorum needs "
        + redlock.quorum
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
   * Compare-and-extend on every node, like {@link QuorumRedlock#extendAll}, counting a node's yes
   * only if its status passes the quarantine (read after the yes was awaited).
   */
  void extendAll(String resource, String token, Duration ttl, long deadline, Tally tally) {
    tally.reset();
    LockNode[] nodes = redlock.nodes;
    int n = nodes.length;
    long start = redlock.ticker.read();
    @SuppressWarnings({"unchecked", "rawtypes"}) // generic array creation
    Reply<Boolean>[] replies = new Reply[n];
    int[] order = redlock.fanOutOrder.current();
    boolean sampled = redlock.fanOutOrder.sampleNext();
    Reply.beginFanOut();
    try {
      for (int k = 0; k < n; k++) {
        int i = order[k];
        try {
          replies[i] = nodes[i].extend(resource, token, ttl);
        } catch (IllegalArgumentException e) {
          for (int j = 0; j < n; j++) {
            if (replies[j] != null) {
              redlock.abandonQuietly(replies[j], j);
            }
          }
          throw e;
        } catch (RuntimeException e) {
          redlock.nodeFailed(tally, i, "extend", e);
        }
      }
    } catch (Throwable t) {
      Reply.dispatchDeferred(); // nobody will await it now: it runs as a queued call would
      throw t;
    } finally {
      Reply.endFanOut();
    }
    @SuppressWarnings({"unchecked", "rawtypes"}) // generic array creation
    Reply<NodeStatus>[] statuses = new Reply[n];
    try {
      for (int step = 0; step < 2 * n; step++) {
        int i = order[step % n];
        Reply<Boolean> reply = QuorumRedlock.takeInAwaitOrder(replies, order, step);
        if (reply == null) {
          continue;
        }
        long since = sampled ? redlock.ticker.read() : 0;
        try {
          Boolean answer = reply.await(redlock.remaining(deadline));
          redlock.waited(sampled, i, since);
          if (Boolean.TRUE.equals(answer)) {
            statuses[i] = startStatus(i);
          } else {
            tally.no++;
          }
        } catch (RuntimeException e) {
          redlock.notAnswered(sampled, i, since, e);
          redlock.nodeFailed(tally, i, "extend", e);
          if (QuorumRedlock.stillPending(e)) {
            redlock.abandonQuietly(reply, i);
          }
        }
      }
      redlock.measured(sampled);
    } finally {
      Reply.dispatchDeferred(); // after an exception too: it must run
    }
    for (int i = 0; i < n; i++) {
      if (statuses[i] != null) {
        if (judge(i, statuses[i], deadline, start)) {
          tally.yes(redlock.quorum, redlock.ticker.read());
        } else {
          tally.no++;
        }
      }
    }
  }
}
