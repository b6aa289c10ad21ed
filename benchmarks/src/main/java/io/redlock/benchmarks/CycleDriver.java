package io.redlock.benchmarks;

import io.redlock.Lease;
import io.redlock.Redlock;
import java.time.Duration;
import java.util.List;
import java.util.function.LongUnaryOperator;

/**
 * Runs uncontended lock cycles (acquire, then release) of one build of the library, on 256 keys in
 * turn. {@link CompareBuilds} loads a copy of this class into each build's class loader, so its
 * calls link against that build; only JDK types cross between the builds.
 */
public final class CycleDriver implements LongUnaryOperator, AutoCloseable {
  private static final Duration TTL = Duration.ofSeconds(10);

  private final Redlock redlock;
  private final String[] keys = new String[256];
  private int next;

  /**
   * @param uris the nodes
   * @param keyPrefix a prefix of this driver's own, so that builds never contend for a key
   */
  public CycleDriver(List<String> uris, String keyPrefix) {
    this.redlock = Redlock.builder().nodeUris(uris).build();
    for (int i = 0; i < keys.length; i++) {
      keys[i] = keyPrefix + i;
    }
  }

  /** Runs {@code cycles} cycles; returns the nanoseconds they took. */
  @Override
  public long applyAsLong(long cycles) {
    long start = System.nanoTime();
    for (long i = 0; i < cycles; i++) {
      Lease lease =
          redlock
              .tryAcquire(keys[next++ & 255], TTL)
              .orElseThrow(() -> new IllegalStateException("an uncontended key was held"));
      lease.release();
    }
    return System.nanoTime() - start;
  }

  @Override
  public void close() {
    redlock.close();
  }
}
