package io.redlock.jdbc.internal;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Bounded polling for the tests of this package. */
final class Waits {
  private Waits() {}

  /** Polls {@code condition} every 5 ms; false if it is still false after {@code limit}. */
  static boolean within(Duration limit, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      Thread.sleep(5);
    }
    return true;
  }

  /** Waits up to 10 s for {@code latch}, inside a task: an interrupt is kept for the caller. */
  static void awaitInTask(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
