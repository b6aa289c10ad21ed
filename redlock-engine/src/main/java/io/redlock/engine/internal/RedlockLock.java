package io.redlock.engine.internal;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLock;
import io.redlock.LeaseLost;
import io.redlock.LeaseLostException;
import io.redlock.LockTimeoutException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

/**
 * {@link Lock} over one resource ({@code Redlock.asLock}): the lease is acquired by the first
 * {@code lock} of a thread, kept alive while held (while the holding thread lives), and released by
 * its last {@code unlock}. Reentrant per thread, with a hold count that every {@code asLock} object
 * of one Redlock for one resource shares. Between threads of this JVM it excludes as the lock does
 * between processes, and more: a second thread waits for the holder's last {@code unlock}, also
 * when the holder's lease was lost meanwhile, so that no two threads are ever told "locked" at
 * once.
 *
 * <p>A lost lease is never reported as held: once the lease is lost (its keep-alive failed, its key
 * was deleted, its validity ran out), a reentrant {@code lock} or {@code tryLock} of the holder
 * throws {@link LeaseLostException}, and every {@code unlock} throws {@link
 * IllegalMonitorStateException} caused by it (the last one still releases what is left).
 */
final class RedlockLock implements LeaseLock {
  /** "Wait for ever": as long as {@code acquire} can count. */
  private static final long FOREVER = Long.MAX_VALUE;

  /** How often a waiting thread looks whether the holder thread ended without unlocking. */
  private static final long OWNER_CHECK_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** What every {@code asLock} object of one Redlock shares for one resource. */
  static final class Holder {
    final ReentrantLock guard = new ReentrantLock();
    final Condition freed = guard.newCondition();

    /** Threads that hold or want the lock; changed only inside the map's compute. */
    int users;

    /** The holding thread (set while it acquires too), its lease and hold count; under guard. */
    Thread owner;

    QuorumLease lease;
    int holds;
  }

  private final QuorumRedlock redlock;
  private final String resource;
  private final Duration ttl;
  private final KeepAlive keepAlive;

  RedlockLock(QuorumRedlock redlock, String resource, Duration ttl, KeepAlive keepAlive) {
    this.redlock = redlock;
    this.resource = resource;
    this.ttl = ttl;
    this.keepAlive = Objects.requireNonNull(keepAlive, "keepAlive must not be null");
    redlock.timing.checkTtl(ttl);
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
    lock(FOREVER);
  }

  @Override
  public boolean tryLock() {
    try {
      return lock(0);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    return lock(Math.max(0, unit.toNanos(time)));
  }

  /** Locks within {@code waitNanos} ({@link #FOREVER}: no limit); true if this thread holds it. */
  private boolean lock(long waitNanos) throws InterruptedException {
    long start = System.nanoTime();
    Thread me = Thread.currentThread();
    Holder h = join();
    boolean acquired = false;
    try {
      if (!claim(h, me, start, waitNanos)) {
        return false;
      }
      if (h.holds > 0) {
        return true; // reentered: the holder's own claim stays counted
      }
      QuorumLease taken;
      try {
        taken =
            (QuorumLease) redlock.acquire(resource, ttl, Duration.ofNanos(left(start, waitNanos)));
      } catch (LockTimeoutException e) {
        return false;
      }
      try {
        taken.keepAlive(
            keepAlive,
            () -> me.isAlive() ? null : "the thread that holds it has ended without unlocking");
      } catch (RuntimeException e) {
        taken.release(); // the Redlock closed meanwhile: leave no key behind
        throw e;
      }
      h.guard.lock();
      try {
        h.lease = taken;
        h.holds = 1;
      } finally {
        h.guard.unlock();
      }
      acquired = true;
      return true;
    } finally {
      if (!acquired) {
        unclaim(h, me);
        leave(h);
      }
    }
  }

  /**
   * Makes {@code me} the local owner, waiting for another owner's last unlock; counts a reentry
   * (throwing if the held lease is lost). False if the wait ran out.
   */
  private boolean claim(Holder h, Thread me, long start, long waitNanos)
      throws InterruptedException {
    h.guard.lockInterruptibly();
    try {
      if (h.owner == me) {
        h.lease.checkValid(); // a lost lease is not held: throws LeaseLostException
        h.holds++;
        return true;
      }
      while (h.owner != null) {
        if (!h.owner.isAlive()) {
          abandoned(h);
          break;
        }
        long left = left(start, waitNanos);
        if (left <= 0) {
          return false;
        }
        h.freed.awaitNanos(Math.min(left, OWNER_CHECK_NANOS));
      }
      h.owner = me;
      h.holds = 0;
      h.lease = null;
      return true;
    } finally {
      h.guard.unlock();
    }
  }

  /** The owner thread ended without unlocking: its lease goes (best effort), the lock is free. */
  private void abandoned(Holder h) {
    QuorumLease l = h.lease;
    h.owner = null;
    h.lease = null;
    h.holds = 0;
    if (l != null) {
      try {
        l.release();
      } catch (RuntimeException e) {
        // it runs out on its own: its keep-alive stopped with the thread
      }
      leave(h); // the dead owner's claim
    }
  }

  /** Gives back a claim that did not become a hold (a failed acquire, or a reentry). */
  private static void unclaim(Holder h, Thread me) {
    h.guard.lock();
    try {
      if (h.owner == me && h.holds == 0) {
        h.owner = null;
        h.freed.signalAll();
      }
    } finally {
      h.guard.unlock();
    }
  }

  private static long left(long start, long waitNanos) {
    return waitNanos == FOREVER ? FOREVER : Math.max(0, waitNanos - (System.nanoTime() - start));
  }

  private Holder join() {
    return redlock.lockHolders.compute(
        resource,
        (k, h) -> {
          Holder held = h != null ? h : new Holder();
          held.users++;
          return held;
        });
  }

  private void leave(Holder h) {
    redlock.lockHolders.computeIfPresent(
        resource, (k, current) -> current == h && --h.users == 0 ? null : current);
  }

  @Override
  public void unlock() {
    Thread me = Thread.currentThread();
    Holder h = redlock.lockHolders.get(resource);
    QuorumLease held;
    LeaseLost lost;
    boolean last;
    if (h == null) {
      throw notHeld(me);
    }
    h.guard.lock();
    try {
      if (h.owner != me || h.holds == 0) {
        throw notHeld(me);
      }
      held = h.lease;
      lost = lostOrNull(held);
      last = --h.holds == 0;
    } finally {
      h.guard.unlock();
    }
    if (last) {
      try {
        held.release(); // also when lost: it cleans up the nodes that still hold it
      } finally {
        h.guard.lock();
        try {
          h.owner = null;
          h.lease = null;
          h.freed.signalAll();
        } finally {
          h.guard.unlock();
        }
        leave(h);
      }
    }
    if (lost != null) {
      IllegalMonitorStateException e =
          new IllegalMonitorStateException(
              "the lock on '" + resource + "' was lost while held: " + lost.detail());
      e.initCause(new LeaseLostException(lost));
      throw e;
    }
  }

  private IllegalMonitorStateException notHeld(Thread me) {
    return new IllegalMonitorStateException(
        "the lock on '" + resource + "' is not held by this thread (" + me.getName() + ")");
  }

  private static LeaseLost lostOrNull(QuorumLease l) {
    try {
      l.checkValid();
      return null;
    } catch (LeaseLostException e) {
      return e.lost();
    }
  }

  @Override
  public Optional<Lease> lease() {
    return Optional.ofNullable(held(null));
  }

  @Override
  public boolean isHeldByCurrentThread() {
    return held(Thread.currentThread()) != null;
  }

  @Override
  public boolean isLocked() {
    return lease().isPresent();
  }

  /** The lease held, by {@code by} if not null; null if none. */
  private QuorumLease held(Thread by) {
    Holder h = redlock.lockHolders.get(resource);
    if (h == null) {
      return null;
    }
    h.guard.lock();
    try {
      return h.holds > 0 && (by == null || h.owner == by) ? h.lease : null;
    } finally {
      h.guard.unlock();
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
    Holder h = redlock.lockHolders.get(resource);
    Thread o = h == null ? null : h.owner;
    return "Lock['" + resource + "', " + (o == null ? "unlocked" : "held by " + o.getName()) + "]";
  }
}
