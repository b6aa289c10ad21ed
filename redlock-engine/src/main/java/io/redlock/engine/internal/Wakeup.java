package io.redlock.engine.internal;

import java.util.concurrent.locks.LockSupport;

/**
 * A latch that one waiting thread parks on between attempts and that release notifications raise
 * (from a node's thread, or from a lease released in this JVM). Raising never blocks; the waiter
 * clears it before each attempt, so a release during an attempt still cuts the next pause short.
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
