package io.redlock.shedlock;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import io.redlock.RedlockSettings;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;

/**
 * A ShedLock {@link ExtensibleLockProvider} on a {@link Redlock}: a scheduled task runs where a
 * majority of the quorum's nodes (any mix of Redis, SQL databases and MongoDB) granted its lock.
 *
 * <pre>{@code
 * @Bean
 * LockProvider lockProvider(Redlock redlock) {
 *   return new RedlockLockProvider(redlock);
 * }
 * }</pre>
 *
 * <p>How ShedLock's settings map:
 *
 * <ul>
 *   <li>{@code lockAtMostFor} is the lease's TTL: if the holder dies, or its task runs longer, the
 *       lock expires on the nodes, each by its own clock, after {@code lockAtMostFor}. The lease is
 *       not kept alive; extend it with {@code LockExtender}, {@link SimpleLock#extend} or
 *       ShedLock's {@code KeepAliveLockProvider}.
 *   <li>{@code lockAtLeastFor}: at unlock, if less than {@code lockAtLeastFor} has passed since
 *       {@link #lock} was called (measured on this JVM's monotonic clock, not on wall clocks), the
 *       lock is not deleted: its expiry on the nodes is moved to the end of {@code lockAtLeastFor}.
 *   <li>The lock's name, after {@linkplain #RedlockLockProvider(Redlock, String) a prefix} (default
 *       {@value #DEFAULT_PREFIX}), is the Redlock resource.
 * </ul>
 *
 * <p>{@link #lock} makes the Redlock's configured number of attempts ({@link
 * RedlockSettings#retryAttempts()}, with its random pauses), so that instances whose schedules fire
 * at the same moment and split the nodes' votes do not all skip the run. It returns empty when the
 * lock is held elsewhere, and throws {@link LockException} when too few nodes answered to decide: a
 * task is neither run nor silently skipped without a quorum. As with every ShedLock provider, set
 * {@code lockAtLeastFor} for tasks shorter than the spread of the instances' clocks and pauses.
 *
 * <p>Thread-safe; the Redlock stays the caller's to close.
 */
public final class RedlockLockProvider implements ExtensibleLockProvider {
  /** The prefix put before lock names unless another is given. */
  public static final String DEFAULT_PREFIX = "shedlock:";

  private final Redlock redlock;
  private final String prefix;

  /** A provider whose resources are the lock names prefixed with {@value #DEFAULT_PREFIX}. */
  public RedlockLockProvider(Redlock redlock) {
    this(redlock, DEFAULT_PREFIX);
  }

  /**
   * A provider whose resources are {@code prefix + name}.
   *
   * @param prefix put before every lock name, e.g. to keep two applications' tasks apart on shared
   *     nodes; may be empty
   */
  public RedlockLockProvider(Redlock redlock, String prefix) {
    this.redlock = Objects.requireNonNull(redlock, "redlock must not be null");
    this.prefix = Objects.requireNonNull(prefix, "prefix must not be null (use \"\" for none)");
  }

  /** The resource a lock name maps to. */
  public String resource(String lockName) {
    return prefix + lockName;
  }

  /**
   * Acquires the lock for {@code lockAtMostFor}.
   *
   * @return the lock, or empty if it is held elsewhere
   * @throws LockException if too few nodes answered to grant or refuse it
   * @throws IllegalArgumentException if {@code lockAtMostFor} is too short for a lease (it must
   *     exceed the Redlock's drift allowance)
   */
  @Override
  public Optional<SimpleLock> lock(LockConfiguration configuration) {
    long started = System.nanoTime();
    String resource = resource(configuration.getName());
    Duration ttl = configuration.getLockAtMostFor();
    RedlockSettings settings = redlock.settings();
    for (int attempt = 1; ; attempt++) {
      try {
        Lease lease = redlock.acquire(resource, ttl, Duration.ZERO);
        return Optional.of(new RedlockLock(configuration, lease, started));
      } catch (LockTimeoutException e) {
        if (attempt >= settings.retryAttempts()) {
          if (e.quorumUnreachable()) {
            throw new LockException(
                "ShedLock lock '" + configuration.getName() + "' not decided: " + e.getMessage(),
                e);
          }
          return Optional.empty();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return Optional.empty();
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "lockAtMostFor of ShedLock lock '"
                + configuration.getName()
                + "' ("
                + ttl
                + ") cannot be a Redlock lease's TTL: "
                + e.getMessage(),
            e);
      } catch (RedlockException e) {
        throw new LockException(
            "ShedLock lock '" + configuration.getName() + "' failed: " + e.getMessage(), e);
      }
      if (!pause(settings)) {
        return Optional.empty();
      }
    }
  }

  private static boolean pause(RedlockSettings settings) {
    long min = settings.retryDelayMin().toNanos();
    long max = settings.retryDelayMax().toNanos();
    long nanos = max > min ? ThreadLocalRandom.current().nextLong(min, max + 1) : min;
    try {
      TimeUnit.NANOSECONDS.sleep(nanos);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  @Override
  public String toString() {
    return "RedlockLockProvider[prefix '" + prefix + "', nodes " + redlock.nodes() + "]";
  }

  /** One holding of a ShedLock lock: a lease and when its configuration began. */
  private static final class RedlockLock extends AbstractSimpleLock {
    private final Lease lease;
    private final long startedNanos;

    RedlockLock(LockConfiguration configuration, Lease lease, long startedNanos) {
      super(configuration);
      this.lease = lease;
      this.startedNanos = startedNanos;
    }

    @Override
    protected void doUnlock() {
      long atLeast = lockConfiguration.getLockAtLeastFor().toNanos();
      long remaining = atLeast - (System.nanoTime() - startedNanos);
      if (remaining <= 0) {
        lease.release();
        return;
      }
      // Keep it until lockAtLeastFor ends: move the expiry there instead of deleting.
      Duration rest = Duration.ofMillis(TimeUnit.NANOSECONDS.toMillis(remaining) + 1);
      try {
        // If too few nodes agree, the keys expire by lockAtMostFor, which is no earlier.
        lease.extend(rest);
      } catch (IllegalArgumentException tooShortForALease) {
        // A few milliseconds, under the drift allowance: wait them out, then release.
        try {
          TimeUnit.NANOSECONDS.sleep(remaining);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        lease.release();
      } catch (IllegalStateException lostOrAtMaxExtensions) {
        // Nothing to move: the keys are gone, or expire by lockAtMostFor.
      }
    }

    @Override
    protected Optional<SimpleLock> doExtend(LockConfiguration configuration) {
      long started = System.nanoTime();
      try {
        if (lease.extend(configuration.getLockAtMostFor())) {
          return Optional.of(new RedlockLock(configuration, lease, started));
        }
      } catch (IllegalStateException lostOrAtMaxExtensions) {
        // as a failed extension
      }
      return Optional.empty();
    }

    @Override
    public String toString() {
      return "RedlockLock[" + lockConfiguration + ", valid for " + lease.remainingValidity() + "]";
    }
  }
}
