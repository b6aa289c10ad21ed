package io.redlock.spring.integration;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.LeaseLostException;
import io.redlock.LockTimeoutException;
import io.redlock.Redlock;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The {@link Lock} of one key of a {@link RedlockLockRegistry}: a Redlock lease, taken by a
 * thread's first {@code lock}, kept alive while held, and released by its last {@code unlock}.
 *
 * <p>Threads of this JVM queue on a local {@link ReentrantLock} first, so only one of them asks the
 * nodes at a time, and reentrancy is that lock's: each {@code lock} must be matched by an {@code
 * unlock} of the same thread. {@code unlock} by another thread throws {@link
 * IllegalMonitorStateException}, as {@code ReentrantLock} does.
 *
 * <p>A lost lease is never reported as held, as with {@code Redlock.asLock}. When the lease is lost
 * while held (its token gone from a majority of nodes, renewals failing until too little validity
 * was left, or its validity run out: see {@link Lease#onLost}):
 *
 * <ul>
 *   <li>the holder's reentrant {@code lock}, {@code lockInterruptibly} and {@code tryLock} throw
 *       {@link LeaseLostException} and leave its hold count as it was;
 *   <li>every {@code unlock} of the holder throws {@link IllegalMonitorStateException} caused by a
 *       {@link LeaseLostException}; each still counts, and the last one releases what is left of
 *       the lease and frees the lock;
 *   <li>other threads of this JVM wait for that last {@code unlock}: none is told "locked" while
 *       the holder still believes it holds the lock. {@code LockRegistryLeaderInitiator}'s
 *       heartbeat ({@code tryLock}) gets the exception, unlocks, and revokes leadership.
 * </ul>
 *
 * <p>{@link #fencingToken()} gives the current lease's fencing token when the Redlock was built
 * with {@code fencing(true)}: the number a leader passes as its epoch with every write.
 *
 * <p>Unlike {@code Redlock.asLock}, whose renewal stops when the holding thread dies, a lease held
 * here is renewed until it is unlocked (as a {@code ReentrantLock} held by a dead thread stays
 * locked); {@link RedlockLockRegistry#expireUnusedOlderThan(long)} releases the leases of threads
 * that died holding them, and {@link KeepAlive#maxHold} bounds any holding.
 */
public final class RedlockRegistryLock implements Lock {
  /** "Wait for ever": as long as {@code acquire} can count. */
  private static final Duration FOREVER = Duration.ofDays(365 * 100);

  private final Redlock redlock;
  private final String resource;
  private final Duration ttl;
  private final KeepAlive keepAlive;
  private final LocalLock local = new LocalLock();

  /** The holding thread's lease; written while holding {@link #local}. */
  private volatile Lease lease;

  /** When this lock was last obtained, locked or unlocked (monotonic nanos). */
  private volatile long lastUsed = System.nanoTime();

  RedlockRegistryLock(Redlock redlock, String resource, Duration ttl, KeepAlive keepAlive) {
    this.redlock = redlock;
    this.resource = resource;
    this.ttl = ttl;
    this.keepAlive = keepAlive;
  }

  /** The Redlock resource this lock holds. */
  public String resource() {
    return resource;
  }

  /**
   * The fencing token of the lease held now by some thread of this JVM, e.g. a leader's epoch;
   * empty when the lock is not held here or the Redlock has no fencing ({@code fencing(true)}).
   */
  public OptionalLong fencingToken() {
    Lease l = lease;
    if (l == null) {
      return OptionalLong.empty();
    }
    try {
      return OptionalLong.of(l.fencingToken());
    } catch (IllegalStateException noFencing) {
      return OptionalLong.empty();
    }
  }

  /** True if the current thread holds this lock (its lease may have been lost since). */
  public boolean isHeldByCurrentThread() {
    return local.isHeldByCurrentThread();
  }

  /** True if some thread of this JVM holds this lock. */
  public boolean isLocked() {
    return local.isLocked();
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
    local.lockInterruptibly();
    if (local.getHoldCount() > 1) {
      reenter();
      return;
    }
    try {
      while (!held(redlock.acquire(resource, ttl, FOREVER))) {
        // lost between acquisition and keep-alive: take another
      }
    } catch (InterruptedException | RuntimeException | Error e) {
      local.unlock();
      throw e;
    }
  }

  @Override
  public boolean tryLock() {
    if (!local.tryLock()) {
      return false;
    }
    try {
      return afterLocalLock(0);
    } catch (InterruptedWhileAcquiring e) {
      Thread.currentThread().interrupt(); // tryLock() cannot throw it: keep the flag
      return false;
    }
  }

  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    long deadline = System.nanoTime() + Math.max(0, unit.toNanos(time));
    if (!local.tryLock(time, unit)) {
      return false;
    }
    try {
      return afterLocalLock(Math.max(0, deadline - System.nanoTime()));
    } catch (InterruptedWhileAcquiring e) {
      throw e.cause;
    }
  }

  /** With the local lock just taken: reenter, or acquire the lease within {@code waitNanos}. */
  private boolean afterLocalLock(long waitNanos) {
    if (local.getHoldCount() > 1) {
      reenter();
      return true;
    }
    try {
      if (held(redlock.acquire(resource, ttl, Duration.ofNanos(waitNanos)))) {
        return true;
      }
      local.unlock();
      return false;
    } catch (LockTimeoutException e) {
      local.unlock();
      return false;
    } catch (InterruptedException e) {
      local.unlock();
      throw new InterruptedWhileAcquiring(e);
    } catch (RuntimeException | Error e) {
      local.unlock();
      throw e;
    }
  }

  /** Carries an interrupt out of {@link #afterLocalLock} to the methods that may throw it. */
  private static final class InterruptedWhileAcquiring extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final InterruptedException cause;

    InterruptedWhileAcquiring(InterruptedException cause) {
      super(cause);
      this.cause = cause;
    }
  }

  /** Keeps a fresh lease alive and records it; false if it was lost already (released then). */
  private boolean held(Lease taken) {
    try {
      taken.keepAlive(keepAlive);
    } catch (IllegalStateException lostAlready) {
      taken.release();
      return false;
    }
    lease = taken;
    touch();
    return true;
  }

  /**
   * A reentry of the holder (its local hold just counted): throws {@link LeaseLostException},
   * giving that hold back, if the lease was lost; the holder's other holds stay until it unlocks.
   */
  private void reenter() {
    Lease l = lease;
    try {
      if (l != null) {
        l.checkValid();
      }
    } catch (LeaseLostException e) {
      local.unlock();
      throw e;
    }
    touch();
  }

  @Override
  public void unlock() {
    if (!local.isHeldByCurrentThread()) {
      throw new IllegalMonitorStateException(
          "the lock on '"
              + resource
              + "' is not held by this thread ("
              + Thread.currentThread().getName()
              + ")");
    }
    Lease held = lease;
    LeaseLost lost = lostOrNull(held);
    if (local.getHoldCount() > 1) {
      local.unlock();
      touch();
    } else {
      lease = null;
      try {
        if (held != null) {
          held.release(); // also when lost: it cleans up the nodes that still hold it
        }
      } finally {
        local.unlock();
        touch();
      }
    }
    if (lost != null) {
      throw lostWhileHeld(lost);
    }
  }

  private IllegalMonitorStateException lostWhileHeld(LeaseLost lost) {
    IllegalMonitorStateException e =
        new IllegalMonitorStateException(
            "the lock on '"
                + resource
                + "' was lost while held ("
                + lost.reason()
                + "): "
                + lost.detail());
    e.initCause(new LeaseLostException(lost));
    return e;
  }

  private static LeaseLost lostOrNull(Lease l) {
    if (l == null) {
      return null;
    }
    try {
      l.checkValid();
      return null;
    } catch (LeaseLostException e) {
      return e.lost();
    }
  }

  /** Distributed locks have no conditions. */
  @Override
  public Condition newCondition() {
    throw new UnsupportedOperationException(
        "a distributed lock has no conditions: a signal in this JVM would not reach the other"
            + " holders; coordinate through the protected resource instead");
  }

  void touch() {
    lastUsed = System.nanoTime();
  }

  /** For {@link RedlockLockRegistry#expireUnusedOlderThan}: unlocked and unused for long enough. */
  boolean unusedFor(long nanos, long now) {
    return !local.isLocked() && now - lastUsed > nanos;
  }

  /** For {@link RedlockLockRegistry#expireUnusedOlderThan}: held by a thread that has died. */
  boolean heldByDeadThread() {
    Thread owner = local.owner();
    return owner != null && !owner.isAlive();
  }

  /** Releases the lease of a thread that died holding it; the local lock stays with it. */
  void releaseForDeadThread() {
    Lease l = lease;
    lease = null;
    if (l != null) {
      l.release();
    }
  }

  /** For {@link RedlockLockRegistry#renewLock}: extends the current thread's lease. */
  void renew() {
    if (!local.isHeldByCurrentThread()) {
      throw new IllegalStateException(
          "the lock on '" + resource + "' is not held by this thread, so it cannot be renewed");
    }
    Lease l = lease;
    boolean extended;
    try {
      extended = l != null && l.extend(ttl);
    } catch (IllegalStateException lost) {
      extended = false;
    }
    if (!extended) {
      throw new IllegalStateException(
          "the lease on '"
              + resource
              + "' could not be renewed: it was lost, or too few nodes"
              + " agreed in time");
    }
    touch();
  }

  @Override
  public String toString() {
    Thread owner = local.owner();
    return "RedlockRegistryLock['"
        + resource
        + "', "
        + (owner == null ? "unlocked" : "held by " + owner.getName())
        + "]";
  }

  /** A {@link ReentrantLock} that tells its owner. */
  private static final class LocalLock extends ReentrantLock {
    private static final long serialVersionUID = 1L;

    Thread owner() {
      return getOwner();
    }
  }
}
