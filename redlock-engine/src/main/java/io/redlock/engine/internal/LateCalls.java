package io.redlock.engine.internal;

import io.redlock.ReleaseOutcome;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The calls of one lease that the engine gave up on (timed out or interrupted) and that have not
 * ended yet, per node, and the nodes where an acquire was given up on (it may still set the key):
 * what {@link QuorumLease#releaseAwaitingLate} waits for. Made only when a call of the lease is
 * given up on.
 */
final class LateCalls {
  private final int[] pending;
  private final boolean[] lateAcquire;

  LateCalls(int nodes) {
    this.pending = new int[nodes];
    this.lateAcquire = new boolean[nodes];
  }

  /** A call on {@code node} was given up on; {@link #ended} follows when it ends. */
  synchronized void abandoned(int node, boolean acquire) {
    pending[node]++;
    lateAcquire[node] |= acquire;
  }

  /** A call given up on has ended (and whatever it left behind was seen to). */
  synchronized void ended(int node) {
    pending[node]--;
    notifyAll();
  }

  /** Whether an acquire on {@code node} was given up on: it may have set the key late. */
  synchronized boolean lateAcquire(int node) {
    return lateAcquire[node];
  }

  /**
   * Waits until every call given up on has ended, but on the nodes in {@code skip}, or until {@code
   * deadline} ({@link System#nanoTime()}), whichever is first.
   *
   * @return per node, whether a call given up on is still under way
   */
  synchronized boolean[] awaitEnded(long deadline, boolean[] skip) {
    long left;
    while (underWay(skip) && (left = deadline - System.nanoTime()) > 0) {
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

  private boolean underWay(boolean[] skip) {
    for (int i = 0; i < pending.length; i++) {
      if (pending[i] > 0 && !skip[i]) {
        return true;
      }
    }
    return false;
  }

  /**
   * After the lease's release ({@code first}): waits for the calls given up on until {@code
   * deadline} (not for nodes that are {@code down}), then releases again ({@code releaseAgain} on
   * the nodes it marks) where the key may remain: where the node granted ({@code granted}, null if
   * not known) or its grant may come late, and the release was not answered or an acquire was under
   * way. Once nothing of the lease is under way on a node, a release answered there is final.
   *
   * @return the outcome, whose failed nodes are those where the key may still be
   */
  ReleaseOutcome sweep(
      String[] names,
      boolean[] granted,
      ReleaseOutcome first,
      long deadline,
      boolean[] down,
      Function<boolean[], ReleaseOutcome> releaseAgain) {
    boolean[] stillLate = awaitEnded(deadline, down);
    int n = names.length;
    boolean[] unsure = new boolean[n];
    boolean[] again = new boolean[n];
    boolean any = false;
    for (int i = 0; i < n; i++) {
      boolean acquireLate = lateAcquire(i);
      unsure[i] =
          (granted == null || granted[i] || acquireLate)
              && (acquireLate || first.failedNodes().contains(names[i]));
      again[i] = unsure[i] && !stillLate[i];
      any |= again[i];
    }
    ReleaseOutcome second = any ? releaseAgain.apply(again) : null;
    List<String> failed = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      if (unsure[i] && !(again[i] && !second.failedNodes().contains(names[i]))) {
        failed.add(names[i]);
      }
    }
    int answered = n - failed.size();
    int deleted = Math.min(answered, first.deleted() + (second == null ? 0 : second.deleted()));
    return new ReleaseOutcome(deleted, answered, n, failed);
  }
}
