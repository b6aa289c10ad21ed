package io.redlock.engine.internal;

import io.redlock.Ticker;
import io.redlock.spi.ReleaseSubscription;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
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
 *   <li>The nodes' notifications of one release coalesce: a node counts once per attempt of the
 *       head.
 *   <li>A failed attempt releases the keys it took, and notifying nodes report those releases too.
 *       Those are the head's own echoes, not a sign that the holder let go: after an attempt in
 *       which {@code k} nodes did not answer "held elsewhere", only notifications from more than
 *       {@code k} distinct nodes (or a local release) wake the head. Without this the head of a
 *       lock held on a bare quorum retried in a loop, woken by its own releases.
 *   <li>A waiter that acquires leaves and wakes nobody. While its lease holds the lock, node
 *       notifications are stale (the release it won) and ignored, until the lease is released here
 *       (which wakes the next waiter) or could have expired.
 *   <li>A head that leaves without acquiring (timeout, interrupt) while it holds an unconsumed wake
 *       passes it on to the next waiter, so no release is lost.
 * </ul>
 *
 * <p>Polling stays the fallback for every waiter: notifications are best effort, and other
 * processes' waiters are not in this queue. Not on the hot path: an acquire that succeeds at once
 * never sees a queue. Every method synchronizes on the queue; node threads call {@link #released}.
 */
final class WaitQueue {
  /** The "node" of a lease released through this Redlock: a sure release, never an echo. */
  static final int LOCAL = -1;

  final String resource;
  private final Ticker ticker;

  /** Head first. */
  private final ArrayDeque<Waiter> waiters = new ArrayDeque<>(4);

  /** Nodes whose notification the head received since its attempt began; one release each. */
  private final boolean[] noted;

  private int notedCount;

  /** A sure release (local, or a wake passed on) since the head's attempt began. */
  private boolean forced;

  /** A waiter won the lock: node notifications are stale until a local release or heldUntil. */
  private boolean held;

  private long heldUntil;

  /** The registrations on the notifying nodes; made by one member, closed when the last leaves. */
  private final List<ReleaseSubscription> subscriptions = new ArrayList<>(4);

  private boolean subscribing;
  private boolean retired;

  WaitQueue(String resource, int nodes, Ticker ticker) {
    this.resource = resource;
    this.ticker = ticker;
    this.noted = new boolean[nodes];
  }

  /** One waiting acquire call; made by, and used on, the calling thread. */
  static final class Waiter {
    final Wakeup wakeup = new Wakeup();
    private WaitQueue queue;

    // guarded by queue
    private boolean attempting;

    /** Nodes that did not answer "held elsewhere" in the last attempt: echoes to expect. */
    private int echoes;

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
     * After a failed attempt in which {@code no} of the {@code n} nodes said "held elsewhere": a
     * release noted during the attempt raises the wakeup now. Returns true if it did after a split
     * vote: some nodes were held elsewhere, but fewer than a {@code quorum}, so nobody won and the
     * other contenders are retrying at this moment too.
     */
    boolean failed(int no, int n, int quorum) {
      synchronized (queue) {
        attempting = false;
        echoes = n - no;
        if (queue.waiters.peekFirst() == this && queue.wakes(this)) {
          wakeup.run();
          return no > 0 && no < quorum;
        }
        return false;
      }
    }
  }

  /**
   * Adds {@code waiter} at the tail, after a failed attempt in which {@code no} nodes said "held
   * elsewhere" (see {@link Waiter#failed}).
   */
  synchronized void join(Waiter waiter, int no) {
    waiter.queue = this;
    waiter.echoes = noted.length - no;
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
    if (wasHead) {
      boolean unused =
          !acquired
              && (waiter.wakeup.isRaised()
                  || (waiter.attempting && (forced || notedCount > 0))); // left mid-attempt
      newEpoch(unused);
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
      if (!noted[node]) {
        noted[node] = true;
        notedCount++;
      }
    }
    Waiter head = waiters.peekFirst();
    if (head != null && !head.attempting && wakes(head)) {
      head.wakeup.run();
    }
  }

  /** A listener for node {@code node}'s notifications. */
  Runnable listener(int node) {
    return () -> released(node);
  }

  /** Whether the releases noted since the head's attempt began are more than its own echoes. */
  private boolean wakes(Waiter head) {
    return forced || notedCount > head.echoes;
  }

  private void newEpoch(boolean force) {
    forced = force;
    if (notedCount > 0) {
      Arrays.fill(noted, false);
      notedCount = 0;
    }
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
