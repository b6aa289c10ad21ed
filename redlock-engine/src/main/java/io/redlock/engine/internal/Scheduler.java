package io.redlock.engine.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Redlock's threads for what happens later: keep-alive renewals, loss detection, asynchronous
 * acquisitions and releases ({@link #workers}), the calls of loss listeners ({@link #notifier}),
 * and the engine's own chores ({@link #chore}). Started at first use, so that a Redlock that uses
 * none of them runs no thread; a few threads serve any number of leases.
 *
 * <p>It also knows the leases that are kept alive or watched for loss, weakly (a lease the
 * application dropped is not kept reachable by this), so that closing the Redlock can stop their
 * renewal first and then tell their listeners.
 */
final class Scheduler {
  private static final Logger LOG = LoggerFactory.getLogger(Scheduler.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  /** How long close() waits for a renewal or an attempt under way to end. */
  private static final long CLOSE_WAIT_MILLIS = 5_000;

  private static final int MAX_CHORES = 4_096;

  private final int threads;
  private final Object lock = new Object();

  // guarded by lock
  private ScheduledThreadPoolExecutor workers;
  private ThreadPoolExecutor notifier;
  private final ThreadPoolExecutor chores = single("redlock-engine-", MAX_CHORES);
  private boolean closed;
  private final Set<QuorumLease> watched = Collections.newSetFromMap(new WeakHashMap<>());

  Scheduler(int threads) {
    this.threads = threads;
  }

  private ScheduledThreadPoolExecutor workers() {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("this Redlock is closed; build a new one to take locks");
      }
      if (workers == null) {
        workers = new ScheduledThreadPoolExecutor(threads, daemon("redlock-scheduler-"));
        workers.setRemoveOnCancelPolicy(true);
        workers.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
      }
      return workers;
    }
  }

  Executor executor() {
    return command -> workers().execute(command);
  }

  /** Runs {@code task} on a worker after {@code nanos}; null if the Redlock is closed. */
  ScheduledFuture<?> schedule(Runnable task, long nanos) {
    try {
      return workers().schedule(task, Math.max(0, nanos), TimeUnit.NANOSECONDS);
    } catch (IllegalStateException | RejectedExecutionException closing) {
      return null;
    }
  }

  /** The thread that calls loss listeners, one at a time, in order. */
  Executor notifier() {
    synchronized (lock) {
      if (notifier == null) {
        notifier = single("redlock-lost-listener-", Integer.MAX_VALUE);
      }
      return notifier;
    }
  }

  /**
   * Runs {@code chore} (releasing a grant that came after its attempt gave up) on the engine's own
   * thread, off the callers'; false if it was skipped because the Redlock is closed or {@value
   * #MAX_CHORES} are queued: its key then expires by TTL, never on the caller's thread.
   */
  boolean chore(String what, Runnable chore) {
    try {
      chores.execute(
          () -> {
            try {
              chore.run();
            } catch (RuntimeException e) {
              LOG.warn("{} failed", what, e);
            }
          });
      return true;
    } catch (RejectedExecutionException closedOrFull) {
      LOG.debug("{} skipped: the Redlock is closed or its chores queue is full", what);
      return false;
    }
  }

  /** Waits until the chores queued so far are done, for at most {@code millis} (for tests). */
  void awaitChores(long millis) throws InterruptedException {
    java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
    if (chore("a test's wait", done::countDown)) {
      done.await(millis, TimeUnit.MILLISECONDS);
    }
  }

  /** Remembers a lease that is kept alive or watched for loss; false if already closed. */
  boolean watch(QuorumLease lease) {
    synchronized (lock) {
      if (closed) {
        return false;
      }
      watched.add(lease);
      return true;
    }
  }

  void unwatch(QuorumLease lease) {
    synchronized (lock) {
      watched.remove(lease);
    }
  }

  boolean isClosed() {
    synchronized (lock) {
      return closed;
    }
  }

  /**
   * Stops every renewal and waiting acquisition, waits a moment for those under way, then tells the
   * watched leases that the Redlock closed. After this returns, no renewal is sent.
   */
  void close() {
    List<QuorumLease> leases;
    ScheduledThreadPoolExecutor w;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      w = workers;
      leases = new ArrayList<>(watched);
      watched.clear();
    }
    if (w != null) {
      w.shutdownNow();
      try {
        if (!w.awaitTermination(CLOSE_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
          LOG.warn("a renewal or attempt was still running {} ms after close", CLOSE_WAIT_MILLIS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    for (QuorumLease lease : leases) {
      lease.redlockClosed();
    }
    synchronized (lock) {
      if (notifier != null) {
        notifier.shutdown(); // the listeners queued above still run
      }
      chores.shutdown();
    }
  }

  /** One thread at most, ended after a few idle seconds, over a queue of {@code capacity}. */
  private static ThreadPoolExecutor single(String prefix, int capacity) {
    ThreadPoolExecutor single =
        new ThreadPoolExecutor(
            1, 1, 5, TimeUnit.SECONDS, new LinkedBlockingQueue<>(capacity), daemon(prefix));
    single.allowCoreThreadTimeOut(true);
    return single;
  }

  private static java.util.concurrent.ThreadFactory daemon(String prefix) {
    return runnable -> {
      Thread t = new Thread(runnable, prefix + THREADS.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
