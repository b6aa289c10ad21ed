package io.redlock;

import java.time.Duration;

/**
 * A lock held on a majority of nodes, until its validity runs out or it is released.
 *
 * <p>Ownership is the token, not the thread: a lease may be extended or released from any thread.
 * Validity is computed from a monotonic clock on this machine and already discounts the time the
 * acquisition took and the allowance for clock drift. Once {@link #remainingValidity()} reaches
 * zero, other clients may acquire the resource; work that must never overlap another holder's needs
 * a fencing token checked by the protected resource (see the README's safety model).
 *
 * <p>{@link #close()} releases, so a lease fits try-with-resources. Both are idempotent.
 */
public interface Lease extends AutoCloseable {
  /** The locked resource's name, as given to acquire. */
  String resource();

  /** The random token that proves ownership on every node (at least 128 bits, URL-safe). */
  String token();

  /** The time left before other clients may acquire the resource; zero once expired or released. */
  Duration remainingValidity();

  /** True while {@link #remainingValidity()} is positive and the lease was not released. */
  boolean isValid();

  /**
   * Sets the expiry of this lease's key to {@code ttl} from now on every node that still holds this
   * token. Succeeds only if a majority agreed within the remaining validity; the validity is then
   * recomputed from the start of this call. On failure the previous validity stands.
   *
   * @param ttl the new time to live, positive
   * @return true if a majority extended in time
   * @throws IllegalStateException if the lease was released or reached the configured maximum
   *     number of extensions
   */
  boolean extend(Duration ttl);

  /** How many times this lease was successfully extended. */
  int extensions();

  /**
   * Deletes this lease's key on every node where it still holds this token. Never throws because a
   * node is down; the outcome tells how many nodes confirmed. A second call does nothing and
   * returns the first call's outcome.
   */
  ReleaseOutcome release();

  /** Same as {@link #release()}, ignoring the outcome. */
  @Override
  void close();
}
