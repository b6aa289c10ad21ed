package io.redlock.spring.integration;

import io.redlock.KeepAlive;
import io.redlock.Redlock;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration lock registry on a {@link Redlock}: {@link #obtain(Object)} gives one {@link
 * RedlockRegistryLock} per key, the Redlock's own {@link Redlock#asLock} lock on {@code prefix +
 * key}: held on a majority of the quorum's nodes, kept alive while held.
 *
 * <p>Leader election follows from Spring Integration's {@code LockRegistryLeaderInitiator} over
 * this registry; with a Redlock built with {@code fencing(true)}, {@link #fencingToken(Object)} is
 * the leader's epoch, to be passed with its writes so that a deposed leader's are refused.
 *
 * <p>Keys must be strings; the Redlock resource is {@code prefix + key}. Thread-safe; the Redlock
 * stays the caller's to close.
 */
public final class RedlockLockRegistry implements ExpirableLockRegistry, RenewableLockRegistry {
  private final Redlock redlock;
  private final Duration ttl;
  private final String prefix;
  private final KeepAlive keepAlive;
  private final ConcurrentMap<String, RedlockRegistryLock> locks = new ConcurrentHashMap<>();

  /** A registry whose leases live for {@code ttl} between renewals, keys used as they are. */
  public RedlockLockRegistry(Redlock redlock, Duration ttl) {
    this(redlock, ttl, "");
  }

  /** A registry whose resources are {@code prefix + key}; {@code ttl} must be positive. */
  public RedlockLockRegistry(Redlock redlock, Duration ttl, String prefix) {
    this(redlock, ttl, prefix, KeepAlive.defaults());
  }

  /**
   * A registry whose resources are {@code prefix + key} and whose leases are kept alive with {@code
   * keepAlive} (e.g. {@code KeepAlive.defaults().maxHold(Duration.ofHours(1))}).
   *
   * @param ttl the TTL of each lease: how long the lock outlives a holder that stopped renewing
   * @throws IllegalArgumentException if {@code ttl} is not positive
   */
  public RedlockLockRegistry(Redlock redlock, Duration ttl, String prefix, KeepAlive keepAlive) {
    this.redlock = Objects.requireNonNull(redlock, "redlock must not be null");
    this.ttl = Objects.requireNonNull(ttl, "ttl must not be null");
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException("ttl must be positive, got " + ttl);
    }
    this.prefix = Objects.requireNonNull(prefix, "prefix must not be null (use \"\" for none)");
    this.keepAlive = Objects.requireNonNull(keepAlive, "keepAlive must not be null");
  }

  /** The lock of a non-empty String key: the same one until {@link #expireUnusedOlderThan}. */
  @Override
  public RedlockRegistryLock obtain(Object lockKey) {
    RedlockRegistryLock lock =
        locks.computeIfAbsent(
            key(lockKey), k -> new RedlockRegistryLock(redlock, prefix + k, ttl, keepAlive));
    lock.touch();
    return lock;
  }

  /**
   * Forgets the locks that are not held and were not used for {@code age} milliseconds, so that a
   * registry used with many keys does not grow for ever; call it now and then.
   */
  @Override
  public void expireUnusedOlderThan(long age) {
    long nanos = TimeUnit.MILLISECONDS.toNanos(Math.max(0, age));
    long now = System.nanoTime();
    locks.values().removeIf(lock -> lock.unusedFor(nanos, now));
  }

  /**
   * Extends the current thread's lease of {@code lockKey} to the TTL now (it is kept alive anyway).
   *
   * @throws IllegalStateException if this thread does not hold it, or it could not be extended
   */
  @Override
  public void renewLock(Object lockKey) {
    String key = key(lockKey);
    RedlockRegistryLock lock = locks.get(key);
    if (lock == null) {
      throw new IllegalStateException(
          "no lock on '" + key + "' was obtained from this registry, so it cannot be renewed");
    }
    lock.renew();
  }

  /**
   * The fencing token of {@code lockKey}'s lease held in this JVM, e.g. the epoch of a leader
   * elected on that key; empty if it is not held here or the Redlock has no fencing.
   */
  public OptionalLong fencingToken(Object lockKey) {
    RedlockRegistryLock lock = locks.get(key(lockKey));
    return lock == null ? OptionalLong.empty() : lock.fencingToken();
  }

  /** The TTL of each lease. */
  public Duration ttl() {
    return ttl;
  }

  private static String key(Object lockKey) {
    if (!(lockKey instanceof String key) || key.isEmpty()) {
      throw new IllegalArgumentException(
          "a Redlock lock key must be a non-empty String, got "
              + (lockKey == null ? "null" : lockKey.getClass().getName() + " " + lockKey));
    }
    return key;
  }

  @Override
  public String toString() {
    return "RedlockLockRegistry['" + prefix + "', ttl " + ttl + ", " + locks.size() + " locks]";
  }
}
