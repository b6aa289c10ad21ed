package io.redlock.spi;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockException;
import io.redlock.RedlockTransientException;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * The pending answer of one node to one call. The engine starts a call on every node, then awaits
 * each reply against one shared deadline, so a backend may send all requests before reading any
 * answer (multiplexing) instead of needing a thread per node.
 *
 * <p>Exactly one of two things happens to every reply: {@link #await} returns or throws an answer
 * or failure; or {@code await} times out (or is interrupted) and the engine calls {@link #abandon}.
 * A backend must therefore not treat an interrupted {@code await} as the call's end: {@code
 * abandon} follows.
 *
 * @param <T> the answer's type
 */
public interface Reply<T> {

  /**
   * Waits up to {@code timeout} for the answer. A zero timeout returns only an answer that is
   * already there.
   *
   * @return the node's answer
   * @throws NodeTimeoutException if there is no answer in time; the call may still complete later
   * @throws RedlockException if the node could not be asked (transient or not); if the thread is
   *     interrupted, a {@link RedlockTransientException} with the interrupt flag set again
   */
  T await(Duration timeout);

  /**
   * Gives up on this reply after {@link #await} timed out or was interrupted. Called at most once.
   *
   * <ul>
   *   <li>A call the backend has <b>not sent yet</b> (still queued for a worker or a connection) is
   *       <b>dropped</b>: never sent. Run late, it would only load a node that is already slow and
   *       hold a connection that a fresh call needs. Except a {@link LockNode#release release}: it
   *       is still sent when it can be, since it can only delete the caller's own key, and dropping
   *       it would leave that key held until its TTL runs out.
   *   <li>A call <b>already sent</b> is read to its end in the background, within the backend's own
   *       timeouts, and whatever it held (a connection) is freed at once when it ends.
   * </ul>
   *
   * <p>Either way the backend then calls {@code ended} exactly once, on any thread (possibly this
   * one, before {@code abandon} returns): with the answer if one came, or with {@code null} if none
   * will (dropped, failed, or no answer within the backend's timeout). The engine uses it to
   * release a late "acquired" and to know when the node has no more calls in flight; it must return
   * quickly.
   */
  void abandon(Consumer<? super T> ended);

  /** A reply that is already there. */
  static <T> Reply<T> of(T value) {
    return new DoneReply<>(value, null);
  }

  /** A reply that failed before anything was sent. */
  static <T> Reply<T> failed(RedlockException failure) {
    return new DoneReply<>(null, java.util.Objects.requireNonNull(failure, "failure"));
  }
}
