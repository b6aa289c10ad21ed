package io.redlock;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * A Redlock over N independent nodes of any mix of backends. A lock is held when a strict majority
 * (N/2+1) of nodes accepted it and the time left after acquisition, minus an allowance for clock
 * drift, is still positive.
 *
 * <p>Create one with {@link #builder()}, share it across threads, and close it when the application
 * stops (it closes its nodes). Thread-safe.
 *
 * <pre>{@code
 * try (Redlock redlock = Redlock.builder().nodes(a, b, c).build();
 *     Lease lease = redlock.acquire("invoice-42", Duration.ofSeconds(10), Duration.ofSeconds(5))) {
 *   // work while lease.isValid()
 * }
 * }</pre>
 */
public interface Redlock extends AutoCloseable {

  /** A builder; the engine ({@code io.redlock:redlock-engine}) must be on the class path. */
  static RedlockBuilder builder() {
    return new RedlockBuilder();
  }

  /**
   * Tries to lock {@code resource} for {@code ttl}, making up to the configured number of attempts
   * with a random pause between them.
   *
   * @return the lease, or empty if the resource stayed held by someone else or too few nodes
   *     answered. If the thread is interrupted while pausing, returns empty with the interrupt flag
   *     set.
   * @throws IllegalArgumentException if the resource is empty or the TTL is not positive
   */
  Optional<Lease> tryAcquire(String resource, Duration ttl);

  /**
   * Locks {@code resource} for {@code ttl}, retrying with random pauses for up to {@code maxWait}.
   * A {@code maxWait} of zero makes exactly one attempt.
   *
   * <p>While it waits, a pause ends early (followed by a random 0–2 ms, to spread the waiters) when
   * the resource is released: by a lease of this {@code Redlock}, or on a node that declares {@link
   * io.redlock.spi.NodeCapabilities#releaseNotifications()}. Without such a notification the random
   * pauses apply as they are.
   *
   * @throws LockTimeoutException if the lock could not be had in time; the message says whether it
   *     was held or whether nodes were unreachable
   * @throws InterruptedException if the thread was interrupted while waiting
   */
  Lease acquire(String resource, Duration ttl, Duration maxWait) throws InterruptedException;

  /**
   * Runs {@code action} holding a lease obtained by {@link #tryAcquire}, then releases it. The
   * lease is not kept alive unless the action calls {@code lease.keepAlive()}.
   *
   * @throws LockTimeoutException if the lease could not be had
   * @throws LeaseLostException after the action, if the lease was lost while it ran (its result is
   *     then dropped: the work ran, at least in part, without the lock)
   */
  default <T, E extends Exception> T withLease(
      String resource, Duration ttl, LeaseAction<T, E> action) throws E {
    Lease lease =
        tryAcquire(resource, ttl)
            .orElseThrow(
                () ->
                    new LockTimeoutException(
                        resource,
                        Duration.ZERO,
                        "held by another client after "
                            + settings().retryAttempts()
                            + " attempts, or too few nodes answered",
                        List.of(),
                        null));
    try (lease) {
      T result = action.run(lease);
      failIfLost(lease);
      return result;
    }
  }

  /**
   * Runs {@code action} holding a lease obtained by {@link #acquire}, then releases it. The lease
   * is not kept alive unless the action calls {@code lease.keepAlive()}.
   *
   * @throws LockTimeoutException if the lease could not be had within {@code maxWait}
   * @throws LeaseLostException after the action, if the lease was lost while it ran
   */
  default <T, E extends Exception> T withLease(
      String resource, Duration ttl, Duration maxWait, LeaseAction<T, E> action)
      throws E, InterruptedException {
    try (Lease lease = acquire(resource, ttl, maxWait)) {
      T result = action.run(lease);
      failIfLost(lease);
      return result;
    }
  }

  /** Throws if {@code lease} was lost; a lease the action released itself is fine. */
  private static void failIfLost(Lease lease) {
    try {
      lease.checkValid();
    } catch (LeaseLostException e) {
      if (e.lost().reason() != LeaseLost.Reason.RELEASED) {
        throw e;
      }
    }
  }

  /**
   * {@link #tryAcquire} on a thread of the library's own: the caller's thread does not wait, and
   * the pauses between attempts are scheduled, not slept.
   */
  CompletableFuture<Optional<Lease>> tryAcquireAsync(String resource, Duration ttl);

  /**
   * {@link #acquire} without holding a thread while waiting: the attempts run on the library's
   * threads and the pauses between them are scheduled. The future fails with {@link
   * LockTimeoutException} (or {@link NodesMisconfiguredException}) as {@code acquire} would throw;
   * cancelling it stops the waiting (a lease already granted is released).
   */
  CompletableFuture<Lease> acquireAsync(String resource, Duration ttl, Duration maxWait);

  /**
   * Locks every resource in {@code resources}, or none: they are acquired one by one in their
   * natural order (so two callers locking overlapping sets never deadlock), and on failure every
   * part already held is released. One lease covers them all: its validity is the shortest of the
   * parts, and extend, keep-alive and release act on every part.
   *
   * @throws LockTimeoutException if some resource could not be had within {@code maxWait} in all
   * @throws InterruptedException if the thread was interrupted while waiting
   * @throws IllegalArgumentException for an empty set or a blank resource
   */
  Lease acquireAll(Collection<String> resources, Duration ttl, Duration maxWait)
      throws InterruptedException;

  /**
   * Takes over a lease from its token, e.g. one acquired by another process that handed its token
   * on: extends the key to {@code ttl} on every node that still holds this token, and returns a
   * lease that can be extended, kept alive and released. Its fencing token is not known.
   *
   * @throws LeaseLostException if too few nodes still hold the token (it was released, expired, or
   *     never held)
   */
  Lease resume(String resource, String token, Duration ttl);

  /**
   * A {@link java.util.concurrent.locks.Lock} over {@code resource}: reentrant per thread, with a
   * hold count as {@link java.util.concurrent.locks.ReentrantLock} has, and kept alive while held.
   * {@code unlock()} from a thread that does not hold it, or after the lease was lost while held,
   * throws {@link IllegalMonitorStateException} (naming the loss). Conditions are not supported.
   * Its {@link LeaseLock} views show the holder and its lease (e.g. for the fencing token).
   */
  default LeaseLock asLock(String resource, Duration ttl) {
    return asLock(resource, ttl, KeepAlive.defaults());
  }

  /**
   * As {@link #asLock(String, Duration)}, with each lease kept alive by {@code keepAlive}: e.g.
   * {@code KeepAlive.defaults().maxHold(Duration.ofHours(1))} lets a lock held longer run out.
   */
  LeaseLock asLock(String resource, Duration ttl, KeepAlive keepAlive);

  /** The nodes of this quorum, redacted (safe to print). */
  List<String> nodes();

  /** How many nodes must agree: N/2+1. */
  default int quorum() {
    return nodes().size() / 2 + 1;
  }

  /**
   * Every node's health as this client sees it, in the order the nodes were given: whether it
   * answers, its last error, the calls in flight and the time since its last answer. Cheap (no
   * network call); safe to call from any thread, e.g. a health check.
   */
  List<NodeHealth> health();

  /**
   * Probes every node, all at once against one deadline, for diagnostics ({@code redlock doctor},
   * health checks): on each node, {@code rounds} lock cycles ({@code tryAcquire}, {@code extend},
   * {@code release}) on fresh random keys, timed; then its status report if it declares one; then
   * {@code rounds} reads of its store's clock (at most 20) if it reads one, of which the read with
   * the shortest round trip gives the offset. A node that fails its first lock call is reported
   * unreachable and asked nothing more. The calls count in {@link #health()} as any other.
   *
   * @param rounds lock cycles and clock reads per node, at least 1
   * @param timeout how long the whole probe may take; a call not answered by then is given up and
   *     reported as such
   * @return one report per node, in the order the nodes were given
   * @throws IllegalArgumentException if {@code rounds} is below 1 or {@code timeout} not positive
   * @throws IllegalStateException if this Redlock is closed
   */
  List<NodeReport> probe(int rounds, Duration timeout);

  /** {@link #probe(int, Duration)} with one round: one lock cycle and one clock read per node. */
  default List<NodeReport> probe(Duration timeout) {
    return probe(1, timeout);
  }

  /** The settings in force. */
  RedlockSettings settings();

  /**
   * Closes every node. Leases still held are not released (their keys expire by TTL); release them
   * first. Idempotent.
   */
  @Override
  void close();
}
