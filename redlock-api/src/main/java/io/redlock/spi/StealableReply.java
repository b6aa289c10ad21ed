package io.redlock.spi;

import io.redlock.RedlockTransientException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The reply of {@link Reply#supplyAsyncOrInline}: queued on a worker pool, but run by whichever
 * thread gets to it first, the worker or the thread awaiting the reply. One compare-and-set
 * decides, so the operation runs exactly once.
 *
 * <p>Inside an engine's fan-out ({@link Reply#beginFanOut}) the first such reply is kept back
 * instead of queued (it is "pending" for the thread): the engine awaits it first and runs it
 * itself, so no worker is woken for nothing. Anything else queues it, so that it never starts later
 * than it would have: the engine awaiting another reply first ({@link Reply#awaiting}), the await
 * loop ending by any path ({@link Reply#dispatchDeferred}), another fan-out beginning, the engine
 * asking {@link #runsOnAwait} when it may no longer run inline, and an {@link #await} that cannot
 * run it. {@link #abandon} drops a call that no thread has started.
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

  /** One thread's fan-out: whether one is being made, and the reply kept back, if any. */
  private static final class FanOut {
    boolean open;
    boolean deferredOne;
    StealableReply<?> pending;

    void dispatchPending() {
      StealableReply<?> p = pending;
      if (p != null) {
        pending = null;
        p.dispatch();
      }
    }
  }

  private static final ThreadLocal<FanOut> FAN_OUT = ThreadLocal.withInitial(FanOut::new);

  static void beginFanOut() {
    FanOut f = FAN_OUT.get();
    f.dispatchPending(); // one kept back by an enclosing fan-out: it must not wait for this one
    f.open = true;
    f.deferredOne = false;
  }

  static void endFanOut() {
    FAN_OUT.get().open = false; // the reply kept back, if any, stays pending until awaited
  }

  static void awaiting(Reply<?> next) {
    FanOut f = FAN_OUT.get();
    if (f.pending != null) {
      if (f.pending == next) {
        f.pending = null; // its await runs it here, or queues it
      } else {
        f.dispatchPending();
      }
    }
  }

  static void dispatchDeferred() {
    FAN_OUT.get().dispatchPending();
  }

  /** Keeps {@code reply} back if it is the first of an open fan-out and may run inline now. */
  static boolean deferred(StealableReply<?> reply) {
    FanOut f = FAN_OUT.get();
    if (!f.open || f.deferredOne) {
      return false;
    }
    f.deferredOne = true; // only the first: one made after a refused one would not be awaited first
    if (!reply.inlineOk()) {
      return false;
    }
    f.pending = reply;
    return true;
  }

  private final Reply.Budgeted<T> operation;
  private final BooleanSupplier inlineAllowed;
  private final Executor executor;
  private final String node;
  private final CompletableFuture<T> future = new CompletableFuture<>();

  @SuppressWarnings("unused") // through TAKEN
  private volatile boolean taken;

  /** Whether it was handed to the executor (or that was tried); see {@link #dispatch}. */
  @SuppressWarnings("unused") // through DISPATCHED
  private volatile boolean dispatched;

  /** Whether an abandoned call that no thread has started is dropped, or still run. */
  private final boolean dropIfAbandoned;

  StealableReply(
      Reply.Budgeted<T> operation,
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
  void dispatch() {
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

  /** A kept-back call that may no longer run inline is queued now, and the answer is false. */
  @Override
  public boolean runsOnAwait() {
    if (taken) {
      return false;
    }
    if (inlineOk()) {
      return true;
    }
    dispatch();
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

  /**
   * A call no thread has started is dropped (unless it must still run: then it is queued, as a
   * kept-back call would be); a running one ends in the background.
   */
  @Override
  public void abandon(Consumer<? super T> ended) {
    if (!dropIfAbandoned) {
      dispatch();
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
        + (taken ? ", taken" : dispatched ? ", queued" : ", kept back")
        + "]";
  }
}
