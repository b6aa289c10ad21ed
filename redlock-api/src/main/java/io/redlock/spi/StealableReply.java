package io.redlock.spi;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The reply of {@link Reply#supplyAsyncOrInline}: queued on a worker pool, but run by whichever
 * thread gets to it first, the worker or the thread awaiting the reply. One compare-and-set
 * decides, so the operation runs exactly once.
 */
final class StealableReply<T> implements Reply<T>, Runnable {
  private static final VarHandle TAKEN;

  static {
    try {
      TAKEN = MethodHandles.lookup().findVarHandle(StealableReply.class, "taken", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Reply.Budgeted<T> operation;
  private final BooleanSupplier inlineAllowed;
  private final String node;
  private final CompletableFuture<T> future = new CompletableFuture<>();

  @SuppressWarnings("unused") // through TAKEN
  private volatile boolean taken;

  StealableReply(Reply.Budgeted<T> operation, BooleanSupplier inlineAllowed, String node) {
    this.operation = operation;
    this.inlineAllowed = inlineAllowed;
    this.node = node;
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

  @Override
  public boolean runsOnAwait() {
    return !taken && inlineAllowed.getAsBoolean();
  }

  @Override
  public T await(Duration timeout) {
    if (timeout.compareTo(Duration.ZERO) > 0
        && !taken
        && !Thread.currentThread().isInterrupted()
        && inlineAllowed.getAsBoolean()
        && TAKEN.compareAndSet(this, false, true)) {
      return runHere(timeout);
    }
    return new Reply.FutureReply<>(future, node).await(timeout);
  }

  private T runHere(Duration timeout) {
    T value;
    try {
      value = operation.run(timeout);
    } catch (Throwable t) {
      future.completeExceptionally(t);
      if (t instanceof Error error) {
        throw error;
      }
      throw Reply.FutureReply.translate(node, t);
    }
    future.complete(value);
    return value;
  }

  @Override
  public void abandon(Consumer<? super T> lateAnswer) {
    future.thenAccept(lateAnswer);
  }

  @Override
  public String toString() {
    return "StealableReply[" + node + (taken ? ", taken" : ", queued") + "]";
  }
}
