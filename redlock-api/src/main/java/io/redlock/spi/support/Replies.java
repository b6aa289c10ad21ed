package io.redlock.spi.support;

import io.redlock.RedlockTransientException;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
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
    return new FutureReply<>(future, node, null);
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
    CompletableFuture<T> future = new CompletableFuture<>();
    AtomicBoolean taken = new AtomicBoolean(); // by the worker that runs it, or by a drop
    try {
      executor.execute(
          () -> {
            if (taken.compareAndSet(false, true)) {
              try {
                future.complete(operation.get());
              } catch (Throwable t) {
                future.completeExceptionally(t);
              }
            }
          });
    } catch (RejectedExecutionException e) {
      return Reply.failed(
          new RedlockTransientException(
              node, "the node's worker pool refused the call (closed or overloaded)", e));
    }
    Runnable drop =
        dropIfAbandoned
            ? () -> {
              if (taken.compareAndSet(false, true)) {
                future.cancel(false);
              }
            }
            : null;
    return new FutureReply<>(future, node, drop);
  }

  /**
   * A pool of at most {@code threads} daemon threads named {@code name} and a number, for a
   * backend's blocking calls: at most {@code queue} calls wait (more are refused); an idle thread
   * ends after {@code keepAlive}.
   */
  public static ThreadPoolExecutor workers(
      String name, int threads, int queue, Duration keepAlive) {
    AtomicInteger ids = new AtomicInteger();
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            threads,
            threads,
            keepAlive.toMillis(),
            TimeUnit.MILLISECONDS,
            new ArrayBlockingQueue<>(queue),
            r -> {
              Thread t = new Thread(r, name + ids.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }
}
