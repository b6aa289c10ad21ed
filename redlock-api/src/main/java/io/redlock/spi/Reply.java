package io.redlock.spi;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockException;
import io.redlock.RedlockTransientException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;

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

  /**
   * Whether {@link #await} would run the call on the awaiting thread: the call waits in a backend's
   * queue, no worker has started it, and the backend lets the awaiting thread take it over (see
   * {@link #supplyAsyncOrInline}). The engine awaits such replies before the others, so that its
   * thread does a blocking node's work instead of parking while a worker thread wakes up. Must be
   * cheap and must not block. Default: false. A reply that wraps another (for metrics, say) should
   * pass this on, so that the engine's thread may still take the call over; the engine cannot tell
   * a wrapper from a call its fan-out kept back, though, so a wrapped call is always queued first.
   */
  default boolean runsOnAwait() {
    return false;
  }

  /** A reply that is already there. */
  static <T> Reply<T> of(T value) {
    return new FutureReply<>(CompletableFuture.completedFuture(value), "");
  }

  /** A reply that failed before anything was sent. */
  static <T> Reply<T> failed(RedlockException failure) {
    return new FutureReply<>(CompletableFuture.failedFuture(failure), "");
  }

  /**
   * Adapts a future. Failures that are not {@link RedlockException}s are wrapped in a transient one
   * naming {@code node}.
   */
  static <T> Reply<T> of(CompletableFuture<T> future, String node) {
    return new FutureReply<>(future, node);
  }

  /**
   * Runs a blocking operation on {@code executor}: the way for backends built on blocking drivers
   * to let the engine fan out without waiting for each node in turn. A call still queued when the
   * engine abandons its reply is dropped ({@link #abandon}). A full or shut-down executor gives a
   * failed reply.
   */
  static <T> Reply<T> supplyAsync(Supplier<T> operation, Executor executor, String node) {
    return supplyAsync(operation, executor, node, true);
  }

  /**
   * {@link #supplyAsync}, choosing whether a call still queued when the reply is abandoned is
   * dropped ({@code dropIfAbandoned}), or still run (a release: see {@link #abandon}).
   */
  static <T> Reply<T> supplyAsync(
      Supplier<T> operation, Executor executor, String node, boolean dropIfAbandoned) {
    Objects.requireNonNull(operation, "operation");
    Objects.requireNonNull(executor, "executor");
    StealableReply<T> reply =
        new StealableReply<>(
            budget -> operation.get(), () -> false, executor, node, dropIfAbandoned);
    reply.dispatch(); // a refusal fails the reply
    return reply;
  }

  /**
   * Like {@link #supplyAsync}, with work stealing: the call is queued on {@code executor}, and if
   * the engine awaits the reply before a worker has started it, the awaiting thread runs it itself,
   * within the time it is willing to wait. On a machine with few cores this saves the thread hop
   * (waking a worker, then waking the waiter) that otherwise dominates a fast blocking call.
   *
   * <p>{@code operation} receives its time budget: {@code null} on a worker thread (the backend's
   * own timeouts apply; the engine stops waiting on its own), or the awaiting thread's remaining
   * wait, which the operation must honour (e.g. with {@link java.sql.Connection#setNetworkTimeout})
   * and report by throwing {@link NodeTimeoutException} when it runs out. {@code inlineAllowed} is
   * asked just before stealing: answer false whenever the call could block without bound on the
   * caller's thread (no connection at hand, a file lock to wait for).
   */
  static <T> Reply<T> supplyAsyncOrInline(
      Budgeted<T> operation, BooleanSupplier inlineAllowed, Executor executor, String node) {
    return supplyAsyncOrInline(operation, inlineAllowed, executor, node, true);
  }

  /**
   * {@link #supplyAsyncOrInline}, choosing whether a call still queued when the reply is abandoned
   * is dropped ({@code dropIfAbandoned}), or still run (a release: see {@link #abandon}).
   */
  static <T> Reply<T> supplyAsyncOrInline(
      Budgeted<T> operation,
      BooleanSupplier inlineAllowed,
      Executor executor,
      String node,
      boolean dropIfAbandoned) {
    Objects.requireNonNull(operation, "operation");
    Objects.requireNonNull(inlineAllowed, "inlineAllowed");
    Objects.requireNonNull(executor, "executor");
    StealableReply<T> reply =
        new StealableReply<>(operation, inlineAllowed, executor, node, dropIfAbandoned);
    if (!StealableReply.deferred(reply)) {
      reply.dispatch(); // a refusal fails the reply
    }
    return reply;
  }

  // -------------------------------------------------------------------------------------------
  // For engines: a fan-out without a wasted worker wake-up. An engine that starts one call on each
  // node, then awaits first the replies that runsOnAwait(), in the order it made them, calls
  // beginFanOut() before the calls, endFanOut() after them (in a finally), awaiting(reply) before
  // each await, and dispatchDeferred() after its await loop (in a finally). The first reply that
  // supplyAsyncOrInline makes in between is then kept back instead of queued, since the engine is
  // about to run it itself. Whatever else happens first queues it, so it never starts later than it
  // would have. An engine that does not call these gets every call queued at once, as before.

  /** Starts a fan-out on this thread (see above). */
  static void beginFanOut() {
    StealableReply.beginFanOut();
  }

  /** Ends the making of calls that {@link #beginFanOut} started; the awaiting goes on. */
  static void endFanOut() {
    StealableReply.endFanOut();
  }

  /**
   * Tells that this thread is about to await {@code next}: a reply kept back that is not {@code
   * next} is queued first.
   */
  static void awaiting(Reply<?> next) {
    StealableReply.awaiting(next);
  }

  /** Queues the reply kept back by this thread's fan-out, if it is still waiting. */
  static void dispatchDeferred() {
    StealableReply.dispatchDeferred();
  }

  /**
   * A blocking operation that may run on a worker thread or on the thread awaiting its reply.
   *
   * @param <T> its result
   */
  @FunctionalInterface
  interface Budgeted<T> {
    /**
     * Runs the operation.
     *
     * @param budget how long the operation may take on the awaiting thread, or {@code null} on a
     *     worker thread
     */
    T run(Duration budget);
  }

  /** Helper kept package-private: waits on a future and translates the outcome. */
  final class FutureReply<T> implements Reply<T> {
    private final CompletableFuture<T> future;
    private final String node;

    FutureReply(CompletableFuture<T> future, String node) {
      this.future = Objects.requireNonNull(future, "future");
      this.node = node;
    }

    @Override
    public T await(Duration timeout) {
      try {
        if (timeout.isZero() || timeout.isNegative()) {
          if (!future.isDone()) {
            throw new NodeTimeoutException(node, Duration.ZERO);
          }
          return future.join();
        }
        return future.get(timeout.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
      } catch (java.util.concurrent.TimeoutException e) {
        throw new NodeTimeoutException(node, timeout);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new RedlockTransientException(node, "interrupted while waiting for the node", e);
      } catch (java.util.concurrent.ExecutionException
          | java.util.concurrent.CompletionException e) {
        throw translate(node, e.getCause() == null ? e : e.getCause());
      }
    }

    static RuntimeException translate(String node, Throwable cause) {
      if (cause instanceof RedlockException redlock) {
        return redlock;
      }
      if (cause instanceof IllegalArgumentException illegal) {
        return illegal;
      }
      return new RedlockTransientException(node, "the call failed unexpectedly: " + cause, cause);
    }

    @Override
    public void abandon(Consumer<? super T> ended) {
      future.whenComplete((value, failure) -> ended.accept(failure == null ? value : null));
    }
  }
}
