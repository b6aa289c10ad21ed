package io.redlock.engine.internal;

import io.redlock.Ticker;
import io.redlock.spi.ReleaseSubscription;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The waiting {@code acquire} calls of one resource in one Redlock, first come first served, and
 * the release notifications they share.
 *
 * <p>One release wakes one waiter: the head. Without this, every waiter of the JVM heard every
 * node's notification of a release, all retried at once, split the votes and released again (a
 * thundering herd). The rules:
 *
 * <ul>
 *   <li>A notification (from any node, or a lease of this Redlock released locally) raises only the
 *       head's {@link Wakeup}. While the head is making an attempt, notifications are only noted
 *       ("released again"), and raise it when that attempt fails, so it retries promptly.
 *   <li>The nodes' notifications of one release coalesce into one wake.
 *   <li>A failed attempt releases the keys it took, and notifying nodes report those releases too.
 *       Those are the head's own echoes, not a sign that the holder let go: only a notification
 *       from a node that answered "held elsewhere" in the head's last attempt (the holder's
 *       release), or a local release, wakes the head. Without this the head of a lock held on a
 *       bare quorum retried in a loop, woken by its own releases. (Nodes beyond the 64th are told
 *       apart only as a group.)
 *   <li>A waiter that acquires leaves and wakes nobody. While its lease holds the lock, node
 *       notifications are stale (the release it won) and ignored, until the lease is released here
 *       (which wakes the next waiter) or could have expired.
 *   <li>A head that leaves without acquiring (timeout, interrupt) passes on an unconsumed wake and
 *       the releases noted so far, which the next waiter judges by its own last attempt, so no
 *       release is lost.
 * </ul>
 *
 * <p>Only the order of wakes is first come first served: every waiter still polls, and a call that
 * finds the lock free takes it without queueing. Polling stays the fallback for every waiter:
 * notifications are best effort, and other processes' waiters are not in this queue. Not on the hot
 * path: an acquire that succeeds at once never sees a queue. Every method synchronizes on the
 * queue; node threads call {@link #released}.
 */
final class WaitQueue {
  /** The "node" of a lease released through this Redlock: a sure release, never an echo. */
  static final int LOCAL = -1;

  final String resource;
  private final Ticker ticker;

  private final ArrayDeque<Waiter> waiters = new ArrayDeque<>(4);

  /** Nodes whose notification the head received since its attempt began (see Tally.noMask). */
  private long notedMask;

  private boolean notedBeyond64;

  /** A sure release (local, or a wake passed on) since the head's attempt began. */
  private boolean forced;

  /** A waiter won the lock: node notifications are stale until a local release or heldUntil. */
  private boolean held;

  private long heldUntil;

  /** The registrations on the notifying nodes; made by one member, closed when the last leaves. */
  private final List<ReleaseSubscription> subscriptions = new ArrayList<>(4);

  private boolean subscribing;
  private boolean retired;

  WaitQueue(String resource, Ticker ticker) {
    this.resource = resource;
    this.ticker = ticker;
  }

  /** One waiting acquire call; made by, and used on, the calling thread. */
  static final class Waiter {
    final Wakeup wakeup = new Wakeup();
    private WaitQueue queue;

    // guarded by queue
    private boolean attempting;

    /** Nodes that answered "held elsewhere" in the last attempt: their releases are real. */
    private long heldElsewhere;

    private boolean heldElsewhereBeyond64;

    private void lastAttempt(Tally tally) {
      heldElsewhere = tally.noMask;
      heldElsewhereBeyond64 = tally.noBeyond64;
    }

    WaitQueue queue() {
      return queue;
    }

    /** Before an attempt: the wake is consumed, and releases from now on count for after it. */
    void attempting() {
      synchronized (queue) {
        attempting = true;
        wakeup.clear();
        if (queue.waiters.peekFirst() == this) {
          queue.newEpoch(false);
        }
      }
    }

    /**
     * After a failed attempt, as {@code tally} tells it: a release noted during the attempt raises
     * the wakeup now. Returns true if it did after a split vote: some nodes were held elsewhere,
     * but fewer than a {@code quorum}, so nobody won and the other contenders are retrying at this
     * moment too.
     */
    boolean failed(Tally tally, int quorum) {
      int no = tally.no;
      synchronized (queue) {
        attempting = false;
        lastAttempt(tally);
        if (queue.waiters.peekFirst() == this && queue.wakes(this)) {
          wakeup.run();
          return no > 0 && no < quorum;
        }
        return false;
      }
    }
  }

  /** Adds {@code waiter} at the tail, after the failed attempt {@code tally} tells of. */
  synchronized void join(Waiter waiter, Tally tally) {
    waiter.queue = this;
    waiter.lastAttempt(tally);
    waiters.addLast(waiter);
  }

  /**
   * Takes {@code waiter} out of the queue. If it {@code acquired}, nobody wakes (its release will
   * wake the next). If it was the head and leaves with a wake it did not use, the next waiter gets
   * it. Returns true if the queue is now empty: it is retired, and its subscriptions must be closed
   * ({@link #takeSubscriptions}). {@code heldNanos}: how long a lock just won may be held before it
   * can have expired (its TTL).
   */
  synchronized boolean leave(Waiter waiter, boolean acquired, long heldNanos) {
    boolean wasHead = waiters.peekFirst() == waiter;
    if (!waiters.remove(waiter)) {
      return false;
    }
    if (acquired) {
      acquiredLocally(heldNanos);
    }
    if (wasHead && !acquired) {
      // An unconsumed wake is passed on; the releases noted so far stay noted, for the next
      // waiter to judge by its own last attempt.
      if (waiter.wakeup.isRaised() || (waiter.attempting && notedAnything())) {
        forced = true;
      }
      Waiter next = waiters.peekFirst();
      if (next != null && !next.attempting && wakes(next)) {
        next.wakeup.run();
      }
    }
    if (waiters.isEmpty()) {
      retired = true;
      return true;
    }
    return false;
  }

  /**
   * A waiter just won the lock, for up to {@code heldNanos}. Until its lease is released here (a
   * {@link #LOCAL} release) or could have expired, no node notification can mean that the lock is
   * free: what was noted, and what comes, are late reports of the release it won, or echoes of
   * losers' attempts. Dropping them saves the next waiter an attempt that would fail for sure.
   *
   * <p>Not done for a call that won without queueing (it never looks at the queue): measured with 8
   * threads on one key, releasing and at once acquiring again, the head's retry on those late
   * reports often won the lock as it was released again, and without it half the hand-offs went.
   */
  private void acquiredLocally(long heldNanos) {
    held = true;
    heldUntil = ticker.read() + heldNanos;
    newEpoch(false);
  }

  /**
   * A release of the resource, reported by node {@code node} or {@link #LOCAL}: wakes the head, or
   * notes it for after the head's attempt. Called on node threads; returns at once.
   */
  synchronized void released(int node) {
    if (node == LOCAL) {
      held = false;
      forced = true;
    } else {
      if (held) {
        if (ticker.read() - heldUntil < 0) {
          return; // a late report of the release that a waiter of ours just won
        }
        held = false;
      }
      if (node < 64) {
        notedMask |= 1L << node;
      } else {
        notedBeyond64 = true;
      }
    }
    Waiter head = waiters.peekFirst();
    if (head != null && !head.attempting && wakes(head)) {
      head.wakeup.run();
    }
  }

  Runnable listener(int node) {
    return () -> released(node);
  }

  /**
   * Whether a release noted since the head's attempt began was the holder's: a local one, or one
   * from a node that answered "held elsewhere" in the head's last attempt (not an echo of its own).
   */
  private boolean wakes(Waiter head) {
    return forced
        || (notedMask & head.heldElsewhere) != 0
        || (notedBeyond64 && head.heldElsewhereBeyond64);
  }

  private boolean notedAnything() {
    return forced || notedMask != 0 || notedBeyond64;
  }

  private void newEpoch(boolean force) {
    forced = force;
    notedMask = 0;
    notedBeyond64 = false;
  }

  /** True for exactly one caller: the member that makes the subscriptions. */
  synchronized boolean claimSubscribing() {
    if (subscribing) {
      return false;
    }
    subscribing = true;
    return true;
  }

  synchronized void subscribed(ReleaseSubscription subscription) {
    subscriptions.add(subscription);
  }

  /** The subscriptions of a retired queue, to close (outside the monitor); empty otherwise. */
  synchronized List<ReleaseSubscription> takeSubscriptions() {
    if (!retired || subscriptions.isEmpty()) {
      return List.of();
    }
    List<ReleaseSubscription> out = List.copyOf(subscriptions);
    subscriptions.clear();
    return out;
  }
}
