package io.redlock.engine.internal;

import io.redlock.LockTimeoutException;
import io.redlock.RedlockNonTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One acquisition attempt, as the Redlock description has it: a fresh token, the conditional insert
 * started on every node, one deadline for the replies, a strict majority, validity = TTL - elapsed
 * - drift, and a release on every node when the attempt fails. With fencing or restart quarantine
 * ({@link Safety}) the votes are confirmed in a second round before they count.
 *
 * <p>The attempt is also the fan-out's policy for its votes: it counts them in the {@link Tally},
 * and releases a grant that arrives after the attempt gave up on it (once that answer is in, so the
 * release cannot overtake it on the node).
 */
final class Attempt implements FanOut.Policy<AcquireResult> {
  private static final Logger LOG = LoggerFactory.getLogger(Attempt.class);

  private final Quorum quorum;
  private final Safety safety;
  private final QuorumLease lease;
  private final Duration ttl;
  private final long nodeTimeoutNanos;
  private final Tally tally;

  /** Which nodes granted; with {@link Safety}, their highest fencing counter and statuses. */
  private final boolean[] granted;

  private long fence;
  private final Reply<NodeStatus>[] statuses;

  @SuppressWarnings("unchecked") // generic array creation
  Attempt(
      Quorum quorum,
      Safety safety,
      QuorumLease lease,
      Duration ttl,
      long nodeTimeoutNanos,
      Tally tally) {
    this.quorum = quorum;
    this.safety = safety;
    this.lease = lease;
    this.ttl = ttl;
    this.nodeTimeoutNanos = nodeTimeoutNanos;
    this.tally = tally;
    this.granted = new boolean[quorum.size()];
    this.statuses = safety != null && safety.quarantine() ? new Reply[quorum.size()] : null;
  }

  /**
   * Runs the attempt.
   *
   * @return the active lease, or null after releasing on every node
   */
  QuorumLease run(long ttlNanos, long driftNanos, long minValidityNanos, boolean strict) {
    long start = lease.startedAt();
    quorum.fanOut.run(operation(), this, start + nodeTimeoutNanos);
    long validUntil = start + ttlNanos - driftNanos;
    boolean confirmed =
        (!strict || tally.nonTransient == 0)
            && (safety == null || safety.confirm(this, start, validUntil, nodeTimeoutNanos, tally));
    tally.elapsedNanos = quorum.ticker.read() - start;
    tally.validityNanos = ttlNanos - tally.elapsedNanos - driftNanos;
    if (confirmed
        && tally.yes >= quorum.quorum
        && tally.validityNanos >= minValidityNanos
        && !Thread.currentThread().isInterrupted()) {
      lease.granted(granted, tally.failures);
      lease.activate(validUntil);
      if (LOG.isDebugEnabled()) {
        LOG.debug(
            "locked '{}' on {} of {} nodes in {} µs, validity {} ms{}{}",
            lease.resource(),
            tally.yes,
            quorum.size(),
            tally.elapsedNanos / 1_000,
            tally.validityNanos / 1_000_000,
            lease.hasFence() ? ", fencing token " + lease.fencingToken() : "",
            lease.quarantinedNodes().isEmpty()
                ? ""
                : ", not counted (restart quarantine): " + lease.quarantinedNodes());
      }
      return lease;
    }
    // Mark first, then release: a late "acquired" that arrives from now on is released once it is
    // in, and one that arrived before is deleted by the releases sent below.
    lease.markDone();
    quorum.releaseAll(lease.resource(), lease.token(), nodeTimeoutNanos);
    return null;
  }

  private String operation() {
    return safety != null && safety.fencing() ? "tryAcquireFenced" : "tryAcquire";
  }

  @Override
  public Reply<AcquireResult> start(int node) {
    try {
      return safety != null && safety.fencing()
          ? quorum.nodes[node].tryAcquireFenced(lease.resource(), lease.token(), ttl)
          : quorum.nodes[node].tryAcquire(lease.resource(), lease.token(), ttl);
    } catch (IllegalArgumentException e) {
      lease.markDone(); // before the fan-out abandons what it started: late grants are released
      throw e;
    }
  }

  @Override
  public void answered(int node, AcquireResult result) {
    if (!result.acquired()) {
      tally.no(node);
    } else if (safety == null) {
      granted[node] = true;
      tally.yes(quorum.quorum, 0);
    } else if (safety.fencing() && result.fence() <= 0) {
      // A backend bug; its key is ours and is released with the others.
      tally.fail(
          quorum.names[node],
          new RedlockNonTransientException(
              quorum.names[node],
              "tryAcquireFenced answered acquired without a fencing counter; the backend must"
                  + " answer AcquireResult.acquired(counter)",
              null));
    } else {
      granted[node] = true;
      tally.yes++;
      fence = Math.max(fence, result.fence());
      if (statuses != null) {
        // asked right after the vote, so that it describes the incarnation that voted or a later
        // one
        statuses[node] = safety.startStatus(node);
      }
    }
  }

  @Override
  public void failed(int node, RuntimeException failure) {
    tally.fail(quorum.names[node], failure);
  }

  @Override
  public void abandoned(int node) {
    lease.lateCalls().abandoned(node, true);
  }

  @Override
  public void ended(int node, AcquireResult late) {
    LateCalls calls = lease.lateCalls();
    if (late != null && late.acquired() && lease.isDone()) {
      quorum.releaseLate(
          node, lease.resource(), lease.token(), nodeTimeoutNanos, () -> calls.ended(node));
    } else {
      calls.ended(node);
    }
  }

  // What Safety's second round reads.

  QuorumLease lease() {
    return lease;
  }

  boolean granted(int node) {
    return granted[node];
  }

  long fence() {
    return fence;
  }

  Reply<NodeStatus> status(int node) {
    return statuses[node];
  }

  /** Drops the status replies asked for in round one: no second round needs them. */
  void abandonStatuses() {
    if (statuses == null) {
      return;
    }
    for (Reply<NodeStatus> status : statuses) {
      if (status != null) {
        try {
          status.abandon(late -> {});
        } catch (RuntimeException e) {
          LOG.debug("could not abandon a status reply: {}", e.toString());
        }
      }
    }
  }

  /** Records why the attempt failed when Safety decided it. */
  void failedBecause(LockTimeoutException.Reason reason, String detail) {
    tally.reason = reason;
    tally.detail = detail;
  }
}
