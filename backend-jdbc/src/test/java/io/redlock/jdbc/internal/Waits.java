package io.redlock.jdbc.internal;

import java.time.Duration;
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
}
