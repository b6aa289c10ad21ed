package io.redlock.benchmarks;

import io.redlock.Lease;
import io.redlock.Redlock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.function.LongUnaryOperator;

/**
 * Uncontended lock cycles of one build on several threads sharing one {@link Redlock}: each thread
 * runs the slice's cycles on 256 keys of its own, and the slice ends when the last thread is done.
 * {@link CompareBuilds} defines a copy of this class in each build's loader, as it does {@link
 * CycleDriver}, so older builds can be compared too.
 */
public final class ParallelCycleDriver implements LongUnaryOperator, AutoCloseable {
  private static final Duration TTL = Duration.ofSeconds(10);

  private final Redlock redlock;
  private final List<Thread> workers = new ArrayList<>();
  private final CyclicBarrier start;
  private final CyclicBarrier done;
  private volatile long cycles;
  private volatile boolean closed;
  private volatile RuntimeException failure;

  /**
   * @param uris the nodes
   * @param keyPrefix a prefix of this driver's own, so that builds never contend for a key
   * @param threads how many threads run cycles at once
   */
  public ParallelCycleDriver(List<String> uris, String keyPrefix, Integer threads) {
    this.redlock = Redlock.builder().nodeUris(uris).build();
    this.start = new CyclicBarrier(threads + 1);
    this.done = new CyclicBarrier(threads + 1);
    for (int t = 0; t < threads; t++) {
      String[] keys = new String[256];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = keyPrefix + t + ":" + i;
      }
      Thread worker = new Thread(() -> work(keys), "cycles-" + keyPrefix + t);
      worker.setDaemon(true);
      worker.start();
      workers.add(worker);
    }
  }

  private void work(String[] keys) {
    int next = 0;
    try {
      while (true) {
        start.await();
        if (closed) {
          return;
        }
        try {
          for (long i = cycles; i > 0; i--) {
            Lease lease =
                redlock
                    .tryAcquire(keys[next++ & 255], TTL)
                    .orElseThrow(() -> new IllegalStateException("an uncontended key was held"));
            lease.release();
          }
        } catch (RuntimeException e) {
          failure = e;
        }
        done.await();
      }
    } catch (InterruptedException | java.util.concurrent.BrokenBarrierException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Runs {@code cycles} cycles on every thread; returns the nanoseconds the slowest took. */
  @Override
  public long applyAsLong(long cycles) {
    this.cycles = cycles;
    long begin = System.nanoTime();
    try {
      start.await();
      done.await();
    } catch (InterruptedException | java.util.concurrent.BrokenBarrierException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
    long took = System.nanoTime() - begin;
    if (failure != null) {
      throw failure;
    }
    return took;
  }

  @Override
  public void close() {
    closed = true;
    try {
      start.await(1, java.util.concurrent.TimeUnit.SECONDS);
    } catch (Exception e) {
      // the workers are daemons: they end with the JVM
    }
    redlock.close();
  }
}
