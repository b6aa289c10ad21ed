package io.redlock.spi;

import io.redlock.RedlockTransientException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The reply of {@link Reply#supplyAsyncOrInline}: queued on a worker pool, but run by whichever
 * thread gets to it first, the worker or the thread awaiting the reply. One compare-and-set
 * decides, so the operation runs exactly once.
 *
 * <p>Inside an engine's fan-out ({@link Reply#beginFanOut}) the first such reply is not queued at
 * once: the engine awaits it first and runs it itself, so no worker is woken for nothing. It is
 * queued when it cannot run inline after all, and when it is abandoned.
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

  /** Per thread: [0] inside a fan-out, [1] its first stealable reply was deferred. */
  private static final ThreadLocal<boolean[]> FAN_OUT =
      ThreadLocal.withInitial(() -> new boolean[2]);

  static void fanOut(boolean begins) {
    boolean[] fanOut = FAN_OUT.get();
    fanOut[0] = begins;
    fanOut[1] = false;
  }

  /** True once per fan-out: for the first reply that may run inline when it is made. */
  static boolean deferThisOne(BooleanSupplier inlineAllowed) {
    boolean[] fanOut = FAN_OUT.get();
    if (fanOut[0] && !fanOut[1] && inlineAllowed.getAsBoolean()) {
      fanOut[1] = true;
      return true;
    }
    return false;
  }

  private final Reply.Budgeted<T> operation;
  private final BooleanSupplier inlineAllowed;
  private final Executor executor;
  private final String node;
  private final CompletableFuture<T> future = new CompletableFuture<>();

  @SuppressWarnings("unused") // through TAKEN
  private volatile boolean taken;

  /** Whether it was handed to the executor (or that was tried); see {@link #dispatch}. */
  private final AtomicBoolean dispatched = new AtomicBoolean();

  StealableReply(
      Reply.Budgeted<T> operation, BooleanSupplier inlineAllowed, Executor executor, String node) {
    this.operation = operation;
    this.inlineAllowed = inlineAllowed;
    this.executor = executor;
    this.node = node;
  }

  /**
   * Queues the call on the executor, once.
   *
   * @return false if the executor refused it (closed or full); the reply has then failed
   */
  boolean dispatch() {
    if (!dispatched.compareAndSet(false, true)) {
      return true;
    }
    try {
      executor.execute(this);
      return true;
    } catch (RejectedExecutionException e) {
      if (TAKEN.compareAndSet(this, false, true)) {
        future.completeExceptionally(
            new RedlockTransientException(
                node, "the node's worker pool refused the call (closed or overloaded)", e));
      }
      return false;
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

  /**
   * True also for a deferred call that cannot run inline any more: its await queues it at once, so
   * the engine must come to it first.
   */
  @Override
  public boolean runsOnAwait() {
    return !taken && (!dispatched.get() || inlineAllowed.getAsBoolean());
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
    dispatch();
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
    dispatch(); // a deferred call still runs, as a queued one would
    future.thenAccept(lateAnswer);
  }

  @Override
  public String toString() {
    return "StealableReply["
        + node
        + (taken ? ", taken" : dispatched.get() ? ", queued" : ", deferred")
        + "]";
  }
}
