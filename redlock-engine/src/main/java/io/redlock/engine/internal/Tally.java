package io.redlock.engine.internal;

import io.redlock.NodeFailure;
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

  /** Why the attempt failed, when fencing or quarantine decided it; null otherwise. */
  io.redlock.LockTimeoutException.Reason reason;

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

  /** Node {@code node} answered no. */
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
}
