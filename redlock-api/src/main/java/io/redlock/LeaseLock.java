package io.redlock;

import java.util.Optional;
import java.util.concurrent.locks.Lock;

/**
 * The {@link Lock} of {@link Redlock#asLock}, with what adapters built on it need to see: who holds
 * it in this JVM, and the lease held (for its fencing token, or to extend it now). The views are
 * shared by every {@code asLock} object of one Redlock for one resource.
 */
public interface LeaseLock extends Lock {
  /** The lease held now by whichever thread of this JVM holds the lock; empty if none does. */
  Optional<Lease> lease();

  /** True if the current thread holds the lock (its lease may have been lost since). */
  boolean isHeldByCurrentThread();

  /** True if some thread of this JVM holds the lock. */
  boolean isLocked();
}
