package io.redlock.engine.internal;

import java.util.concurrent.TimeUnit;

/**
 * The calls of one lease that the engine gave up on (timed out or interrupted) and that have not
 * ended yet, per node, and the nodes where an acquire was given up on (it may still set the key):
 * what {@link QuorumLease#releaseAwaitingLate} waits for. Made only when a call of the lease is
 * given up on.
 */
final class LateCalls {
  private final int[] pending;
  private final boolean[] lateAcquire;
  private int total;

  LateCalls(int nodes) {
    this.pending = new int[nodes];
    this.lateAcquire = new boolean[nodes];
  }

  /** A call on {@code node} was given up on; {@link #ended} follows when it ends. */
  synchronized void abandoned(int node, boolean acquire) {
    pending[node]++;
    total++;
    lateAcquire[node] |= acquire;
  }

  /** A call given up on has ended (and whatever it left behind was seen to). */
  synchronized void ended(int node) {
    pending[node]--;
    if (--total == 0) {
      notifyAll();
    }
  }

  /** Whether an acquire on {@code node} was given up on: it may have set the key late. */
  synchronized boolean lateAcquire(int node) {
    return lateAcquire[node];
  }

  /**
   * Waits until every call given up on has ended, or until {@code deadline} ({@link
   * System#nanoTime()}), whichever is first.
   *
   * @return per node, whether a call given up on is still under way
   */
  synchronized boolean[] awaitEnded(long deadline) {
    long left;
    while (total > 0 && (left = deadline - System.nanoTime()) > 0) {
      try {
        TimeUnit.NANOSECONDS.timedWait(this, left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    boolean[] out = new boolean[pending.length];
    for (int i = 0; i < out.length; i++) {
      out[i] = pending[i] > 0;
    }
    return out;
  }
}
