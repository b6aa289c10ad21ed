package io.redlock.spring.integration;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLock;
import io.redlock.Redlock;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;

/**
 * The lock of one key of a {@link RedlockLockRegistry}: the Redlock's own {@link Redlock#asLock}
 * lock, with its semantics (reentrant per thread; kept alive while held, until the holding thread
 * ends; a lost lease never reported as held), plus the key's resource and fencing token.
 */
public final class RedlockRegistryLock implements LeaseLock {
  private final LeaseLock lock;
  private final String resource;
  private final Duration ttl;

  /** When this lock was last obtained, locked or unlocked (monotonic nanos). */
  private volatile long lastUsed = System.nanoTime();

  RedlockRegistryLock(Redlock redlock, String resource, Duration ttl, KeepAlive keepAlive) {
    this.lock = redlock.asLock(resource, ttl, keepAlive);
    this.resource = resource;
    this.ttl = ttl;
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
    try {
      return lock.lease().map(l -> OptionalLong.of(l.fencingToken())).orElse(OptionalLong.empty());
    } catch (IllegalStateException noFencing) {
      return OptionalLong.empty();
    }
  }

  @Override
  public Optional<Lease> lease() {
    return lock.lease();
  }

  @Override
  public boolean isHeldByCurrentThread() {
    return lock.isHeldByCurrentThread();
  }

  @Override
  public boolean isLocked() {
    return lock.isLocked();
  }

  @Override
  public void lock() {
    lock.lock();
  }

  @Override
  public void lockInterruptibly() throws InterruptedException {
    lock.lockInterruptibly();
  }

  @Override
  public boolean tryLock() {
    return lock.tryLock();
  }

  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    return lock.tryLock(time, unit);
  }

  @Override
  public void unlock() {
    try {
      lock.unlock();
    } finally {
      touch();
    }
  }

  @Override
  public Condition newCondition() {
    return lock.newCondition();
  }

  void touch() {
    lastUsed = System.nanoTime();
  }

  /** For {@link RedlockLockRegistry#expireUnusedOlderThan}: unlocked and unused for long enough. */
  boolean unusedFor(long nanos, long now) {
    return !lock.isLocked() && now - lastUsed > nanos;
  }

  /** For {@link RedlockLockRegistry#renewLock}: extends the current thread's lease to the TTL. */
  void renew() {
    Lease held = lock.isHeldByCurrentThread() ? lock.lease().orElse(null) : null;
    if (held == null) {
      throw new IllegalStateException(
          "the lock on '" + resource + "' is not held by this thread, so it cannot be renewed");
    }
    try {
      if (held.extend(ttl)) {
        touch();
        return;
      }
    } catch (IllegalStateException releasedOrAtMaxExtensions) {
      // as a failed extension
    }
    throw new IllegalStateException(
        "the lease on '" + resource + "' could not be renewed: lost, or too few nodes agreed");
  }

  @Override
  public String toString() {
    return "RedlockRegistryLock['" + resource + "', " + (isLocked() ? "locked']" : "unlocked']");
  }
}
