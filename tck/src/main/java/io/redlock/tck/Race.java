package io.redlock.tck;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * Runs the same task on several threads released at the same instant, so that calls really overlap.
 * Threads are daemons (a stuck backend call cannot keep the JVM alive) and are always shut down by
 * {@link #close()}.
 */
final class Race implements AutoCloseable {
  private final int threads;
  private final ExecutorService pool;

  Race(int threads, String name) {
    this.threads = threads;
    AtomicInteger n = new AtomicInteger();
    this.pool =
        Executors.newFixedThreadPool(
            threads,
            r -> {
              Thread t = new Thread(r, "redlock-tck-" + name + "-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Runs {@code task.apply(i)} for every thread index {@code i}, all started together, and returns
   * their results in index order. The first failure of any thread is rethrown as it is.
   *
   * @throws AssertionError if the threads do not all finish within {@code timeout}
   */
  <T> List<T> run(IntFunction<Callable<T>> task, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    CountDownLatch ready = new CountDownLatch(threads);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<T>> futures = new ArrayList<>(threads);
    for (int i = 0; i < threads; i++) {
      Callable<T> body = task.apply(i);
      futures.add(
          pool.submit(
              () -> {
                ready.countDown();
                // Bounded so that a lost thread cannot park the others forever.
                if (!go.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                  throw new AssertionError("the race never started");
                }
                return body.call();
              }));
    }
    try {
      if (!ready.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
        throw new AssertionError(
            "only " + (threads - ready.getCount()) + " of " + threads + " threads started");
      }
      go.countDown();
      List<T> results = new ArrayList<>(threads);
      for (Future<T> f : futures) {
        long left = deadline - System.nanoTime();
        results.add(f.get(Math.max(left, 0), TimeUnit.NANOSECONDS));
      }
      return results;
    } catch (TimeoutException e) {
      throw new AssertionError(
          threads
              + " threads did not finish within "
              + timeout.toMillis()
              + " ms; a backend call is hanging or far too slow",
          e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof Error error) {
        throw error;
      }
      if (cause instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw new IllegalStateException(cause);
    } finally {
      go.countDown();
      futures.forEach(f -> f.cancel(true));
    }
  }

  @Override
  public void close() {
    pool.shutdownNow();
    try {
      pool.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
