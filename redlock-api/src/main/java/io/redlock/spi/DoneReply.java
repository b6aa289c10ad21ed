package io.redlock.spi;

import io.redlock.RedlockException;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * A reply whose answer or failure is there from the start ({@link Reply#of}, {@link Reply#failed}).
 */
final class DoneReply<T> implements Reply<T> {
  private final T value;
  private final RedlockException failure;

  DoneReply(T value, RedlockException failure) {
    this.value = value;
    this.failure = failure;
  }

  @Override
  public T await(Duration timeout) {
    if (failure != null) {
      throw failure;
    }
    return value;
  }

  @Override
  public void abandon(Consumer<? super T> ended) {
    ended.accept(failure == null ? value : null);
  }
}
