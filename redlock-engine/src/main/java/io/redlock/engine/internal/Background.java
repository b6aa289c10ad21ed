package io.redlock.engine.internal;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One daemon thread per Redlock for the engine's own chores, off the callers' threads: releasing a
 * grant that arrived after its attempt had failed, and the durability check after build. The thread
 * ends after a few idle seconds and comes back with the next chore. A bounded queue: when it is
 * full, a chore is skipped (its key expires by TTL), never run on the caller's thread.
 */
final class Background {
  private static final Logger LOG = LoggerFactory.getLogger(Background.class);
  private static final AtomicInteger THREADS = new AtomicInteger();
  private static final int MAX_QUEUED = 4_096;

  private final ThreadPoolExecutor executor;

  Background() {
    this.executor =
        new ThreadPoolExecutor(
            1,
            1,
            5,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(MAX_QUEUED),
            runnable -> {
              Thread t = new Thread(runnable, "redlock-engine-" + THREADS.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    executor.allowCoreThreadTimeOut(true);
  }

  /** Runs {@code chore} on the background thread; false if it was skipped (closed or full). */
  boolean run(String what, Runnable chore) {
    try {
      executor.execute(
          () -> {
            try {
              chore.run();
            } catch (RuntimeException e) {
              LOG.warn("{} failed", what, e);
            }
          });
      return true;
    } catch (RejectedExecutionException e) {
      LOG.debug("{} skipped: the engine's background queue is full or closed", what);
      return false;
    }
  }

  /** Waits until the chores queued so far are done, for at most {@code millis} (for tests). */
  void awaitIdle(long millis) throws InterruptedException {
    java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
    if (run("a test's wait", done::countDown)) {
      done.await(millis, TimeUnit.MILLISECONDS);
    }
  }

  /** Stops taking chores; the one running finishes. */
  void close() {
    executor.shutdown();
  }
}
