package io.redlock.spi.support;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A reply that waits on a future and translates its outcome into the SPI's failures; abandoned, it
 * first runs its {@code drop} (if any), which cancels a call not started yet.
 */
final class FutureReply<T> implements Reply<T> {
  private final CompletableFuture<T> future;
  private final String node;
  private final Runnable drop;

  FutureReply(CompletableFuture<T> future, String node, Runnable drop) {
    this.future = Objects.requireNonNull(future, "future");
    this.node = node;
    this.drop = drop;
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
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.CompletionException e) {
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
    if (drop != null) {
      drop.run();
    }
    future.whenComplete((value, failure) -> ended.accept(failure == null ? value : null));
  }
}
