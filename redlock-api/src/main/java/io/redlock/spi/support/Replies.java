package io.redlock.spi.support;

import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Replies for backends: from a future, or for a blocking call run on an executor (the way for a
 * backend on a blocking driver to let the engine ask every node at once). Each honours {@link
 * Reply#abandon}: a call still queued when its reply is abandoned is dropped, unless the backend
 * says it must still run (a release).
 */
public final class Replies {
  private Replies() {}

  /**
   * Adapts a future. Failures that are not {@link io.redlock.RedlockException}s are wrapped in a
   * transient one naming {@code node}; abandoning cannot recall the call.
   */
  public static <T> Reply<T> of(CompletableFuture<T> future, String node) {
    return new FutureReply<>(future, node);
  }

  /** {@link #supplyAsync(Supplier, Executor, String, boolean)} of a call that may be dropped. */
  public static <T> Reply<T> supplyAsync(Supplier<T> operation, Executor executor, String node) {
    return supplyAsync(operation, executor, node, true);
  }

  /**
   * Runs a blocking operation on {@code executor}. A call still queued when the engine abandons its
   * reply is dropped, unless {@code dropIfAbandoned} is false (a release). A full or shut-down
   * executor gives a failed reply.
   */
  public static <T> Reply<T> supplyAsync(
      Supplier<T> operation, Executor executor, String node, boolean dropIfAbandoned) {
    Objects.requireNonNull(operation, "operation");
    Objects.requireNonNull(executor, "executor");
    StealableReply<T> reply =
        new StealableReply<>(
            budget -> operation.get(), () -> false, executor, node, dropIfAbandoned);
    reply.send(); // a refusal fails the reply
    return reply;
  }

  /**
   * {@link #supplyAsyncOrInline(Budgeted, BooleanSupplier, Executor, String, boolean)}, droppable.
   */
  public static <T> Reply<T> supplyAsyncOrInline(
      Budgeted<T> operation, BooleanSupplier inlineAllowed, Executor executor, String node) {
    return supplyAsyncOrInline(operation, inlineAllowed, executor, node, true);
  }

  /**
   * Like {@link #supplyAsync}, with work stealing: the call is held until the engine {@linkplain
   * Reply#send sends} it (then it is queued on {@code executor}) or awaits it; if the engine awaits
   * the reply before a worker has started it, the awaiting thread runs it itself, within the time
   * it is willing to wait. On a machine with few cores this saves the thread hop (waking a worker,
   * then waking the waiter) that otherwise dominates a fast blocking call. Abandoned unsent, the
   * call is dropped, or queued if {@code dropIfAbandoned} is false.
   *
   * <p>{@code operation} receives its time budget: {@code null} on a worker thread (the backend's
   * own timeouts apply; the engine stops waiting on its own), or the awaiting thread's remaining
   * wait, which the operation must honour (e.g. with {@link java.sql.Connection#setNetworkTimeout})
   * and report by throwing {@link io.redlock.NodeTimeoutException} when it runs out. {@code
   * inlineAllowed} is asked just before stealing: answer false whenever the call could block
   * without bound on the caller's thread (no connection at hand, a file lock to wait for).
   */
  public static <T> Reply<T> supplyAsyncOrInline(
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
    return reply; // held for the awaiting thread until sent, awaited or abandoned
  }

  /**
   * A blocking operation that may run on a worker thread or on the thread awaiting its reply.
   *
   * @param <T> its result
   */
  @FunctionalInterface
  public interface Budgeted<T> {
    /**
     * Runs the operation.
     *
     * @param budget how long the operation may take on the awaiting thread, or {@code null} on a
     *     worker thread
     */
    T run(Duration budget);
  }
}
