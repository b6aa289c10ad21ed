package io.redlock;

import java.time.Duration;
import java.util.List;

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

  /**
   * The fencing token of this lease: a positive number that is greater than the token of every
   * lease on the same resource granted before this acquisition began, whatever majority of nodes
   * granted either. Pass it with every write to the protected resource, which keeps the highest
   * token it has seen and rejects writes that carry a lower one ({@link FencingGuard}, or a
   * conditional {@code UPDATE ... WHERE fence <= :token}); that stops a holder that paused past its
   * validity from overwriting the work of the next holder.
   *
   * <p>The token stays readable after release. Tokens are not consecutive: they may jump (Redis
   * nodes without persistence derive them from the server's clock in microseconds).
   *
   * @throws IllegalStateException if the Redlock was built without {@link
   *     RedlockBuilder#fencing(boolean) fencing(true)}
   */
  default long fencingToken() {
    throw new IllegalStateException(
        "this lease has no fencing token: build the Redlock with Redlock.builder().fencing(true)");
  }

  /**
   * The nodes (redacted) that granted this lease but whose vote was not counted because they were
   * in restart quarantine (restarted without durable lock state less than the quarantine's maximum
   * TTL ago). Empty when restart quarantine is off or no node was quarantined. A diagnostic: the
   * lease is held on a majority of the other nodes.
   */
  default List<String> quarantinedNodes() {
    return List.of();
  }

  /** The nodes (redacted) whose grant this lease counts on, in node order: a majority, or more. */
  default List<String> grantedNodes() {
    return List.of();
  }

  /**
   * The nodes (redacted) that could not be asked during the acquisition, with why, in node order.
   * Empty when every node answered. A node listed here with a non-{@linkplain
   * NodeFailure#isTransient() transient} cause is misconfigured: the quorum has lost fault
   * tolerance until it is fixed (it is also logged once at WARN).
   */
  default List<NodeFailure> failedNodes() {
    return List.of();
  }

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

  /**
   * {@link #release()}, then waits for late replies, for a caller that is about to exit and so
   * cannot leave the clean-up to the library's background thread: up to {@code maxWait} for the
   * calls of this lease that were given up on (an acquire whose grant may still come, a release cut
   * short by the per-node timeout) to end, late grants being released as they arrive; then sends
   * the release again, with the usual per-node timeout, to every node where the key may remain.
   * Nodes that are down are not waited for.
   *
   * @param maxWait how long to wait for late replies; zero only sends the release again where it
   *     can
   * @return the outcome, where {@link ReleaseOutcome#failedNodes()} are the nodes on which the key
   *     may still be (it expires there by TTL), {@link ReleaseOutcome#answered()} the others, and
   *     {@link ReleaseOutcome#complete()} true when no key can be left behind
   * @throws IllegalArgumentException if {@code maxWait} is null or negative
   */
  ReleaseOutcome releaseAwaitingLate(java.time.Duration maxWait);

  /**
   * Keeps this lease alive with the {@linkplain KeepAlive#defaults() defaults}: see {@link
   * #keepAlive(KeepAlive)}.
   *
   * @return this lease
   */
  default Lease keepAlive() {
    return keepAlive(KeepAlive.defaults());
  }

  /**
   * Extends this lease on a scheduler shared by the Redlock (a few threads for any number of
   * leases) while it is held: every third of its TTL by default, with the TTL it was acquired or
   * last extended with. An extension that fails is retried within the remaining validity; the lease
   * is declared lost ({@link #onLost}) when a majority answers that its token is gone, or, while
   * extensions keep failing, once less than the {@linkplain KeepAlive#lostMargin() margin} of
   * validity is left. Renewal stops on release, close, loss, the Redlock's close, the maximum hold
   * time, or once the application no longer references this lease. Calling it again replaces the
   * options.
   *
   * @return this lease
   * @throws IllegalStateException if the lease was released or is lost
   */
  Lease keepAlive(KeepAlive options);

  /**
   * Calls {@code listener} once, on a thread of the library's own, when this lease is lost: its
   * token is gone from a majority of nodes, its extensions kept failing until only the margin was
   * left, its validity ran out, or the Redlock was closed while it was held. Never after a release.
   * A listener added after the loss runs at once.
   */
  void onLost(java.util.function.Consumer<LeaseLost> listener);

  /** A stage that completes when this lease is lost; see {@link #onLost}. */
  java.util.concurrent.CompletionStage<LeaseLost> whenLost();

  /**
   * Returns quietly while this lease is valid; otherwise throws, for code that checks between steps
   * of its work.
   *
   * @throws LeaseLostException once the lease is lost, has run out, or was released
   */
  void checkValid();

  /** {@link #release()} on a thread of the library's own. */
  java.util.concurrent.CompletableFuture<ReleaseOutcome> releaseAsync();

  /** {@link #extend(Duration)} on a thread of the library's own. */
  java.util.concurrent.CompletableFuture<Boolean> extendAsync(Duration ttl);

  /** Same as {@link #release()}, ignoring the outcome. */
  @Override
  void close();
}
