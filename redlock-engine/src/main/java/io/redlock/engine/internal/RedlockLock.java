package io.redlock.engine.internal;

import io.redlock.KeepAlive;
import io.redlock.LeaseLost;
import io.redlock.LockTimeoutException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * {@link Lock} over one resource ({@code Redlock.asLock}): the lease is acquired by the first
 * {@code lock} of a thread, kept alive while held (while the holding thread lives), and released by
 * its last {@code unlock}. Reentrant per thread, with a hold count. Between threads of this JVM it
 * excludes as the lock does between processes: a second thread waits for the lease.
 */
final class RedlockLock implements Lock {
  /** "Wait for ever": as long as {@code acquire} can count. */
  private static final Duration FOREVER = Duration.ofDays(365 * 100);

  private final QuorumRedlock redlock;
  private final String resource;
  private final Duration ttl;

  /** The holding thread and its lease; written by the holder only, read by anyone. */
  private volatile Thread owner;

  private volatile QuorumLease lease;

  /** How often the owner has locked; touched by the owner only. */
  private int holds;

  RedlockLock(QuorumRedlock redlock, String resource, Duration ttl) {
    this.redlock = redlock;
    this.resource = resource;
    this.ttl = ttl;
    redlock.checkTtl(ttl);
  }

  @Override
  public void lock() {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          lockInterruptibly();
          return;
        } catch (InterruptedException e) {
          interrupted = true; // lock() is not interruptible: keep the flag for afterwards
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public void lockInterruptibly() throws InterruptedException {
    if (!reentered()) {
      held((QuorumLease) redlock.acquire(resource, ttl, FOREVER));
    }
  }

  @Override
  public boolean tryLock() {
    return tryLock(Duration.ZERO);
  }

  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    if (reentered()) {
      return true;
    }
    try {
      held(
          (QuorumLease)
              redlock.acquire(resource, ttl, Duration.ofNanos(Math.max(0, unit.toNanos(time)))));
      return true;
    } catch (LockTimeoutException e) {
      return false;
    }
  }

  private boolean tryLock(Duration wait) {
    try {
      return tryLock(wait.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private boolean reentered() {
    if (owner == Thread.currentThread()) {
      holds++;
      return true;
    }
    return false;
  }

  private void held(QuorumLease taken) {
    Thread me = Thread.currentThread();
    taken.keepAlive(KeepAlive.defaults(), me::isAlive);
    lease = taken;
    holds = 1;
    owner = me;
  }

  @Override
  public void unlock() {
    if (owner != Thread.currentThread()) {
      throw new IllegalMonitorStateException(
          "the lock on '"
              + resource
              + "' is not held by this thread ("
              + Thread.currentThread().getName()
              + ")");
    }
    QuorumLease held = lease;
    LeaseLost lost = lostOrNull(held);
    if (--holds > 0 && lost == null) {
      return;
    }
    owner = null;
    lease = null;
    holds = 0;
    held.release(); // also when lost: it cleans up the nodes that still hold it
    if (lost != null) {
      throw new IllegalMonitorStateException(
          "the lock on '" + resource + "' was lost while held: " + lost.detail());
    }
  }

  private static LeaseLost lostOrNull(QuorumLease l) {
    try {
      l.checkValid();
      return null;
    } catch (io.redlock.LeaseLostException e) {
      return e.lost();
    }
  }

  @Override
  public Condition newCondition() {
    throw new UnsupportedOperationException(
        "a distributed lock has no conditions: a signal in this JVM would not reach the other"
            + " holders; coordinate through the protected resource instead");
  }

  @Override
  public String toString() {
    Thread o = owner;
    return "Lock['" + resource + "', " + (o == null ? "unlocked" : "held by " + o.getName()) + "]";
  }
}
