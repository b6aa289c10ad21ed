package io.redlock.mongo.internal;

import io.redlock.RedlockTransientException;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A reply for a blocking call queued on a node's workers. Unlike {@link Reply#supplyAsync}, a call
 * that the engine abandons before a worker picks it up is never sent: when a node is down or slow,
 * the calls the engine gave up on do not pile up and then reach the server long after they mattered
 * (a stale acquire landing after a restart, say). A call already running is let finish, and its
 * answer goes to the late-answer callback as the SPI requires.
 *
 * @param <T> the answer's type
 */
final class QueuedReply<T> implements Reply<T> {
  private static final int QUEUED = 0;
  private static final int RUNNING = 1;
  private static final int ABANDONED = 2;

  private final AtomicInteger state = new AtomicInteger(QUEUED);
  private final CompletableFuture<T> future = new CompletableFuture<>();
  private final Reply<T> waiter;

  private QueuedReply(String node) {
    this.waiter = Reply.of(future, node);
  }

  /** Queues {@code call} on {@code workers}; a full or shut-down pool gives a failed reply. */
  static <T> Reply<T> submit(Supplier<T> call, Executor workers, String node) {
    QueuedReply<T> reply = new QueuedReply<>(node);
    try {
      workers.execute(() -> reply.run(call));
    } catch (RejectedExecutionException e) {
      return Reply.failed(
          new RedlockTransientException(
              node,
              "the node's worker pool refused the call (closed, or too many calls waiting for a"
                  + " slow server)",
              e));
    }
    return reply;
  }

  private void run(Supplier<T> call) {
    if (!state.compareAndSet(QUEUED, RUNNING)) {
      return; // abandoned before it started: nobody wants the answer, so do not ask
    }
    try {
      future.complete(call.get());
    } catch (RuntimeException | Error e) {
      future.completeExceptionally(e);
    }
  }

  @Override
  public T await(Duration timeout) {
    return waiter.await(timeout);
  }

  @Override
  public void abandon(Consumer<? super T> lateAnswer) {
    if (state.compareAndSet(QUEUED, ABANDONED)) {
      return;
    }
    future.thenAccept(lateAnswer);
  }

  /** True if the call was abandoned before it was sent. For tests. */
  boolean skipped() {
    return state.get() == ABANDONED;
  }
}
