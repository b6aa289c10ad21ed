package io.redlock.engine.internal;

import java.util.concurrent.locks.LockSupport;

/**
 * A latch that one waiting thread parks on between attempts. Its {@link WaitQueue} raises it when
 * the waiter is first in line and the resource was released (a node's notification, or a lease
 * released in this JVM), or when the waiter before it left with a wake it did not use. Raising
 * never blocks; the queue clears it when an attempt begins.
 */
final class Wakeup implements Runnable {
  private final Thread waiter;
  private volatile boolean raised;

  /** A wakeup for the calling thread. */
  Wakeup() {
    this.waiter = Thread.currentThread();
  }

  /** Raises the wakeup: the waiter's pause, or its next one, ends at once. */
  @Override
  public void run() {
    raised = true;
    LockSupport.unpark(waiter);
  }

  boolean isRaised() {
    return raised;
  }

  void clear() {
    raised = false;
  }

  /**
   * Parks the waiter (the thread that created this) for up to {@code nanos} or until raised; true
   * if raised.
   */
  boolean await(long nanos) throws InterruptedException {
    long deadline = System.nanoTime() + nanos;
    while (!raised) {
      if (Thread.interrupted()) {
        throw new InterruptedException("interrupted while waiting for the lock to be released");
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      LockSupport.parkNanos(this, left); // may return early for no reason: the loop re-checks
    }
    return true;
  }
}
