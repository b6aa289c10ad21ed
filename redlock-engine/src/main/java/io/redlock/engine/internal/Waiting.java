package io.redlock.engine.internal;

import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import io.redlock.spi.ReleaseSubscription;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Release notifications for one Redlock: a waiting acquire retries as soon as its resource is
 * released, by a lease of this Redlock or on a node that notifies. Waiters are queued by resource
 * ({@link WaitQueue}): one release wakes one waiter, and each notifying node is subscribed to once
 * per resource.
 */
final class Waiting {
  private static final Logger LOG = LoggerFactory.getLogger(Waiting.class);

  private final LockNode[] nodes;
  private final String[] names;

  /** Which nodes declare release notifications ({@link LockNode#onRelease}). */
  private final boolean[] notifies;

  private final int quorum;
  private final Ticker ticker;
  private final Sleeper sleeper;
  private final Timing timing;

  Waiting(
      LockNode[] nodes, String[] names, int quorum, Ticker ticker, Sleeper sleeper, Timing timing) {
    this.nodes = nodes;
    this.names = names;
    this.quorum = quorum;
    this.ticker = ticker;
    this.sleeper = sleeper;
    this.timing = timing;
    this.notifies = new boolean[nodes.length];
    for (int i = 0; i < nodes.length; i++) {
      notifies[i] = nodes[i].capabilities().releaseNotifications();
    }
  }

  Retries retries(String resource) {
    return new Retries(resource);
  }

  /** The waiting of one acquire between its attempts. */
  final class Retries {
    private final String resource;

    /** Made after the first failed attempt only: an uncontended acquire registers nothing. */
    private WaitQueue.Waiter waiter;

    boolean acquired;

    /** The last pause ended on a release. */
    private boolean woken;

    private int quickRetries;

    Retries(String resource) {
      this.resource = resource;
    }

    void attempting() {
      if (waiter != null) {
        waiter.attempting(); // a release from now on is kept for after this attempt
      }
    }

    /** Whether the failed attempt split the votes while a release was reported meanwhile. */
    boolean failed(Tally tally) {
      return waiter != null && waiter.failed(tally, quorum);
    }

    /** Pauses before the next attempt, at most {@code left}. */
    void pause(Tally tally, boolean splitVote, long left) throws InterruptedException {
      if (waiter == null) {
        waiter = startWaiting(resource, tally);
        subscribeIfFirst(waiter);
      }
      if (splitVote) {
        // The votes were split (some nodes held elsewhere, too few for anyone to have won) and a
        // release was reported meanwhile: the other contenders, waiters of other processes (this
        // JVM wakes one waiter per resource), are retrying now too and would split the votes
        // again; retry after a random 0-2 ms instead. Any other wake retries at once: a jitter
        // after every wake mostly handed the lock back to the thread that had just released it.
        long jitter = Math.min(timing.pickJitterNanos(), left);
        if (jitter > 0) {
          sleeper.sleep(jitter);
        }
        return;
      }
      // A release reaches the nodes one by one, and only some may notify: an attempt woken by the
      // first report can still find the others held, and nobody reports those releases if their
      // nodes do not notify. So after a woken attempt fails, retry a few times after short pauses
      // (1, 2, 4 ms; a report still cuts them short) before polling again.
      long pause;
      if (woken && quickRetries < QUICK_RETRIES) {
        pause = QUICK_RETRY_NANOS << quickRetries;
        quickRetries++;
      } else {
        pause = timing.pickPauseNanos();
        quickRetries = 0;
      }
      // Never pause past the deadline; an attempt at the deadline is the caller's last chance.
      woken = sleeper.await(waiter.wakeup, Math.min(pause, left));
    }

    void stop(long ttlNanos) {
      if (waiter != null) {
        stopWaiting(waiter, acquired, ttlNanos);
      }
    }
  }

  /** Short retries after an attempt woken by a release failed, and the first one's pause. */
  static final int QUICK_RETRIES = 3;

  static final long QUICK_RETRY_NANOS = 1_000_000;

  /**
   * Waiting acquire calls of this Redlock by resource, one {@link WaitQueue} each while anybody
   * waits: one release wakes one waiter, and each notifying node is subscribed to once per
   * resource.
   */
  private final ConcurrentHashMap<String, WaitQueue> waitQueues = new ConcurrentHashMap<>();

  /**
   * Queues a waiter of {@code resource} after its first attempt failed (as {@code tally} says). The
   * member that created the queue subscribes on every node that pushes release notifications; a
   * node that fails to register is only polled.
   */
  private WaitQueue.Waiter startWaiting(String resource, Tally tally) {
    WaitQueue.Waiter waiter = new WaitQueue.Waiter();
    waitQueues.compute(
        resource,
        (k, q) -> {
          WaitQueue out = q != null ? q : new WaitQueue(k, ticker);
          out.join(waiter, tally);
          return out;
        });
    return waiter;
  }

  /**
   * The member that created its queue subscribes on every node that pushes release notifications (a
   * node that fails to register is only polled). Called once the caller holds the waiter, so that
   * whatever happens here it leaves the queue again. Outside compute: onRelease may take a node's
   * locks. The queue cannot retire meanwhile: the member subscribing is in it.
   */
  private void subscribeIfFirst(WaitQueue.Waiter waiter) {
    WaitQueue queue = waiter.queue();
    if (queue.claimSubscribing()) {
      for (int i = 0; i < nodes.length; i++) {
        if (!notifies[i]) {
          continue;
        }
        try {
          queue.subscribed(nodes[i].onRelease(queue.resource, queue.listener(i)));
        } catch (RuntimeException e) {
          LOG.debug(
              "{}: onRelease for '{}' failed, polling: {}", names[i], queue.resource, e.toString());
        }
      }
    }
  }

  /**
   * Takes a waiter out of its queue (see {@link WaitQueue#leave}); the last one out retires the
   * queue and closes its subscriptions. A new waiter arriving meanwhile makes a new queue.
   */
  private void stopWaiting(WaitQueue.Waiter waiter, boolean acquired, long ttlNanos) {
    WaitQueue queue = waiter.queue();
    waitQueues.compute(
        queue.resource, (k, q) -> queue.leave(waiter, acquired, ttlNanos) && q == queue ? null : q);
    for (ReleaseSubscription subscription : queue.takeSubscriptions()) {
      try {
        subscription.close();
      } catch (RuntimeException e) {
        LOG.debug(
            "closing a release subscription on '{}' failed: {}", queue.resource, e.toString());
      }
    }
  }

  /** A lease of this Redlock on {@code resource} was just released: wakes its first waiter. */
  void releasedLocally(String resource) {
    WaitQueue queue = waitQueues.get(resource);
    if (queue != null) {
      queue.released(WaitQueue.LOCAL);
    }
  }

  /** Resources with waiting acquire calls now (for tests). */
  int waitingResources() {
    return waitQueues.size();
  }
}
