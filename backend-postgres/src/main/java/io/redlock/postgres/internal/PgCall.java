package io.redlock.postgres.internal;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * One call on a node: the reply the engine awaits, and the operation the node's event loop writes
 * to a connection. The caller's thread hands it to the event loop, which writes its statement and
 * completes it when the answer (or a failure) comes.
 *
 * <p>A call is <em>sent</em> once it has a place on a connection: either it was given one when it
 * was made ({@link #reserve}: a connection had room for it, and the event loop writes it as soon as
 * it runs), or the event loop claims one for it later ({@link #claimSend}) after it waited for a
 * connection. {@link #abandon} drops a call that is still waiting for a connection, so it is never
 * written (but a release); a sent call is written and read to its end, and then ends, within the
 * node's timeouts.
 *
 * @param <T> the answer's type
 */
final class PgCall<T> implements Reply<T> {
  private static final int QUEUED = 0;
  private static final int SENT = 1;
  private static final int DROPPED = 2;
  private static final int RESERVED = 3;

  private final String node;
  private final PgOp<T> op;
  private final AtomicInteger state = new AtomicInteger(QUEUED);
  private final CompletableFuture<T> result = new CompletableFuture<>();

  /** When the call was made (queued), on {@link System#nanoTime}. */
  final long queuedAt = System.nanoTime();

  /** When the event loop wrote it; set on the event loop. */
  long sentAt;

  /** Whether the table was checked again for this fenced call's counter column (event loop). */
  boolean fenceRechecked;

  PgCall(String node, PgOp<T> op) {
    this.node = node;
    this.op = op;
  }

  PgOp<T> op() {
    return op;
  }

  /**
   * Marks the call as sent before it is handed to the event loop: a connection had room for it.
   * Called once, by the thread that makes the call.
   */
  void reserve() {
    reservedAtSubmit = state.compareAndSet(QUEUED, RESERVED);
  }

  /** Whether {@link #reserve} gave it a place when it was made. */
  boolean reservedAtSubmit;

  /** Claims the writing of the statement; false if the engine gave up on it first (dropped). */
  boolean claimSend() {
    return state.compareAndSet(QUEUED, SENT) || state.compareAndSet(RESERVED, SENT);
  }

  /** True once the engine gave up on the call before it was written. */
  boolean dropped() {
    return state.get() == DROPPED;
  }

  /** True once an answer or failure is there. */
  boolean done() {
    return result.isDone();
  }

  /** The answer. Only the first outcome counts. */
  void succeed(T value) {
    result.complete(value);
  }

  /** The failure. Only the first outcome counts. */
  void fail(RedlockException failure) {
    result.completeExceptionally(failure);
  }

  @Override
  public T await(Duration timeout) {
    try {
      if (timeout.isZero() || timeout.isNegative()) {
        if (!result.isDone()) {
          throw new NodeTimeoutException(node, Duration.ZERO);
        }
        return result.get();
      }
      return result.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new NodeTimeoutException(node, timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RedlockTransientException(node, "interrupted while waiting for the node", e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RedlockException redlock) {
        throw redlock;
      }
      throw new RedlockTransientException(
          node, op.operation() + " failed unexpectedly: " + cause, cause);
    }
  }

  @Override
  public void abandon(Consumer<? super T> ended) {
    // a release is still written when a connection comes: it can only delete the caller's own key
    if (!"release".equals(op.operation()) && state.compareAndSet(QUEUED, DROPPED)) {
      // never written and never will be: the event loop skips it when it comes to it
      result.completeExceptionally(
          new RedlockTransientException(node, op.operation() + " was dropped unsent", null));
      ended.accept(null);
      return;
    }
    // sent (or failed before it could be): the event loop ends it, within the node's timeouts
    result.whenComplete((value, failure) -> ended.accept(failure == null ? value : null));
  }
}
