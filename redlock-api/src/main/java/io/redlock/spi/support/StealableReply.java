package io.redlock.spi.support;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.Reply;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The reply of {@link Replies#supplyAsyncOrInline}: queued on a worker pool, but run by whichever
 * thread gets to it first, the worker or the thread awaiting the reply. One compare-and-set
 * decides, so the operation runs exactly once.
 *
 * <p>It is held, not queued, until {@link #send} (the engine sends every reply but the one it
 * awaits first, so that no worker is woken for a call this thread runs), an {@link #await} that
 * cannot run it, or {@link #runsOnAwait} when it may no longer run inline. {@link #abandon} drops a
 * call that no thread has started, or queues it if it must still run.
 */
final class StealableReply<T> implements Reply<T>, Runnable {
  private static final VarHandle TAKEN;
  private static final VarHandle DISPATCHED;

  static {
    try {
      MethodHandles.Lookup lookup = MethodHandles.lookup();
      TAKEN = lookup.findVarHandle(StealableReply.class, "taken", boolean.class);
      DISPATCHED = lookup.findVarHandle(StealableReply.class, "dispatched", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Replies.Budgeted<T> operation;
  private final BooleanSupplier inlineAllowed;
  private final Executor executor;
  private final String node;
  private final CompletableFuture<T> future = new CompletableFuture<>();

  @SuppressWarnings("unused") // through TAKEN
  private volatile boolean taken;

  /** Whether it was handed to the executor (or that was tried); see {@link #send}. */
  @SuppressWarnings("unused") // through DISPATCHED
  private volatile boolean dispatched;

  /** Whether an abandoned call that no thread has started is dropped, or still run. */
  private final boolean dropIfAbandoned;

  StealableReply(
      Replies.Budgeted<T> operation,
      BooleanSupplier inlineAllowed,
      Executor executor,
      String node,
      boolean dropIfAbandoned) {
    this.dropIfAbandoned = dropIfAbandoned;
    this.operation = operation;
    this.inlineAllowed = inlineAllowed;
    this.executor = executor;
    this.node = node;
  }

  /** The backend's answer; false if asking failed, so that the call then goes to a worker. */
  private boolean inlineOk() {
    try {
      return inlineAllowed.getAsBoolean();
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** Queues the call on the executor, once; if the executor refuses it, the reply fails. */
  @Override
  public void send() {
    if (taken || !DISPATCHED.compareAndSet(this, false, true)) {
      return; // run, running, or queued already
    }
    try {
      executor.execute(this);
    } catch (RejectedExecutionException e) {
      if (TAKEN.compareAndSet(this, false, true)) {
        future.completeExceptionally(
            new RedlockTransientException(
                node, "the node's worker pool refused the call (closed or overloaded)", e));
      }
    }
  }

  /** The worker's side: runs the operation unless the awaiting thread took it. */
  @Override
  public void run() {
    if (!TAKEN.compareAndSet(this, false, true)) {
      return;
    }
    try {
      future.complete(operation.run(null));
    } catch (Throwable t) {
      future.completeExceptionally(t);
    }
  }

  /** A held call that may no longer run inline is queued now, and the answer is false. */
  @Override
  public boolean runsOnAwait() {
    if (taken) {
      return false;
    }
    if (inlineOk()) {
      return true;
    }
    send();
    return false;
  }

  @Override
  public T await(Duration timeout) {
    if (timeout.compareTo(Duration.ZERO) > 0
        && !taken
        && !Thread.currentThread().isInterrupted()
        && inlineOk()
        && TAKEN.compareAndSet(this, false, true)) {
      return runHere(timeout);
    }
    send();
    return new FutureReply<>(future, node).await(timeout);
  }

  private T runHere(Duration timeout) {
    T value;
    try {
      value = operation.run(timeout);
    } catch (Throwable t) {
      if (t instanceof NodeTimeoutException && !dropIfAbandoned && runAgainOnWorker()) {
        throw (NodeTimeoutException) t; // the answer, if any, comes to abandon's ended
      }
      future.completeExceptionally(t);
      if (t instanceof Error error) {
        throw error;
      }
      throw FutureReply.translate(node, t);
    }
    future.complete(value);
    return value;
  }

  /**
   * A call that must not be lost (a release) that ran out of the awaiting thread's budget may not
   * have reached the store: it runs again, on a worker, within the backend's own timeouts. Running
   * a compare-and-delete twice is harmless. False if the executor refuses it.
   */
  private boolean runAgainOnWorker() {
    try {
      executor.execute(
          () -> {
            try {
              future.complete(operation.run(null));
            } catch (Throwable t) {
              future.completeExceptionally(t);
            }
          });
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  /**
   * A call no thread has started is dropped (unless it must still run: then it is queued); a
   * running one ends in the background.
   */
  @Override
  public void abandon(Consumer<? super T> ended) {
    if (!dropIfAbandoned) {
      send();
    } else if (TAKEN.compareAndSet(this, false, true)) {
      future.completeExceptionally(
          new RedlockTransientException(node, "dropped: abandoned before it was sent", null));
    }
    future.whenComplete((value, failure) -> ended.accept(failure == null ? value : null));
  }

  @Override
  public String toString() {
    return "StealableReply["
        + node
        + (taken ? ", taken" : dispatched ? ", queued" : ", held")
        + "]";
  }
}
