package io.redlock.engine.internal;

import io.redlock.LockTimeoutException;
import io.redlock.NodeFailure;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The votes of one fan-out (acquire or extend). Mutable and reused across the attempts of one call,
 * so the hot path allocates nothing for it; confined to the calling thread.
 */
final class Tally {
  /** Nodes that said yes (acquired, extended). */
  int yes;

  /** Nodes that answered no (held by another token, or no longer ours). */
  int no;

  /**
   * Which nodes answered no: bit {@code i} for node {@code i} below 64; {@link #noBeyond64} for any
   * other. A release notified by such a node is the holder's, not an echo of this call's own keys.
   */
  long noMask;

  boolean noBeyond64;

  /** Whether {@link #yes} reached the quorum, and the ticker reading when it did. */
  boolean quorumReached;

  long quorumAtNanos;

  /** The acquisition's elapsed time and resulting validity, for messages. */
  long elapsedNanos;

  long validityNanos;

  /** Names of nodes that could not be asked; null while there are none (no allocation). */
  List<String> failed;

  /** The same nodes with their causes; null while there are none. */
  List<NodeFailure> failures;

  RuntimeException firstFailure;

  /** How many of the failures were non-transient (a retry will not fix them). */
  int nonTransient;

  /** Why the attempt failed when fencing or restart quarantine decided it; null otherwise. */
  String detail;

  LockTimeoutException.Reason reason;

  /** Attempts made so far by the call this tally serves; not reset between attempts. */
  int attempts;

  void reset() {
    yes = 0;
    no = 0;
    noMask = 0;
    noBeyond64 = false;
    quorumReached = false;
    quorumAtNanos = 0;
    elapsedNanos = 0;
    validityNanos = 0;
    failed = null;
    failures = null;
    firstFailure = null;
    nonTransient = 0;
    detail = null;
    reason = null;
  }

  void no(int node) {
    no++;
    if (node < 64) {
      noMask |= 1L << node;
    } else {
      noBeyond64 = true;
    }
  }

  void yes(int quorum, long nowNanos) {
    if (++yes == quorum) {
      quorumReached = true;
      quorumAtNanos = nowNanos;
    }
  }

  void fail(String name, RuntimeException failure) {
    if (failed == null) {
      failed = new ArrayList<>(4);
      failures = new ArrayList<>(4);
      firstFailure = failure;
    }
    failed.add(name);
    NodeFailure f = new NodeFailure(name, failure);
    failures.add(f);
    if (!f.isTransient()) {
      nonTransient++;
    }
  }

  /** The non-transient failures, in the order they came. */
  List<NodeFailure> nonTransientFailures() {
    if (nonTransient == 0) {
      return List.of();
    }
    return failures.stream().filter(f -> !f.isTransient()).toList();
  }

  int failedCount() {
    return failed == null ? 0 : failed.size();
  }

  /** The exception of an acquire that gave up; this tally is of its last attempt. */
  LockTimeoutException timeout(
      Quorum q,
      String resource,
      Duration ttl,
      Duration minValidity,
      long waitedNanos,
      int attempts) {
    String detail =
        describe(q, ttl, minValidity)
            + " ("
            + attempts
            + (attempts == 1 ? " attempt)" : " attempts)");
    return new LockTimeoutException(
        resource,
        Duration.ofNanos(waitedNanos),
        reason(q.quorum),
        detail,
        q.inNodeOrder(failed),
        firstFailure);
  }

  /** Why the last attempt failed; the same cases as {@link #describe}, in the same order. */
  private LockTimeoutException.Reason reason(int quorum) {
    if (reason != null) {
      return reason;
    }
    if (yes >= quorum) {
      return LockTimeoutException.Reason.TOO_SLOW;
    }
    if (yes + no < quorum && failedCount() > 0) {
      return LockTimeoutException.Reason.UNREACHABLE;
    }
    return LockTimeoutException.Reason.HELD;
  }

  String describe(Quorum q, Duration ttl, Duration minValidity) {
    int n = q.size();
    int answered = yes + no;
    StringBuilder sb = new StringBuilder(128);
    if (Thread.currentThread().isInterrupted()) {
      sb.append("interrupted; ");
    }
    if (detail != null) {
      sb.append(detail); // fencing or quarantine said why
      if (failedCount() > 0) {
        sb.append("; unreachable: ").append(String.join(", ", q.inNodeOrder(failed)));
      }
    } else if (yes >= q.quorum) {
      sb.append("acquired on ")
          .append(yes)
          .append(" of ")
          .append(n)
          .append(" nodes, but the acquisition took ")
          .append(elapsedNanos / 1_000_000)
          .append(" ms of the ")
          .append(ttl.toMillis())
          .append(" ms TTL, leaving ")
          .append(validityNanos / 1_000_000)
          .append(" ms of validity after the drift allowance (minimum ")
          .append(minValidity.toMillis())
          .append(" ms); use a longer TTL or find out why the nodes are slow");
    } else if (answered < q.quorum && failedCount() > 0) {
      sb.append("too few nodes reachable: ")
          .append(answered)
          .append(" of ")
          .append(n)
          .append(" answered, a quorum needs ")
          .append(q.quorum)
          .append("; unreachable: ")
          .append(String.join(", ", q.inNodeOrder(failed)));
      if (no > 0) {
        sb.append("; held elsewhere on ").append(no).append(" of the nodes that answered");
      }
    } else {
      sb.append("held by another client: ")
          .append(no)
          .append(" of ")
          .append(n)
          .append(" nodes said the resource is held, ")
          .append(yes)
          .append(" accepted, a quorum needs ")
          .append(q.quorum);
      if (failedCount() > 0) {
        sb.append("; unreachable: ").append(String.join(", ", q.inNodeOrder(failed)));
      }
    }
    return sb.toString();
  }

  /** Why an extension failed, in words, for loss messages. */
  String describeExtension(Quorum q) {
    return yes
        + " of "
        + q.size()
        + " nodes agreed, a quorum needs "
        + q.quorum
        + (failedCount() > 0 ? "; unreachable: " + String.join(", ", q.inNodeOrder(failed)) : "");
  }
}
