package io.redlock.spi;

/**
 * A listener registered with {@link LockNode#onRelease}; closing it stops the notifications. {@code
 * close()} is idempotent, returns at once and never throws.
 */
@FunctionalInterface
public interface ReleaseSubscription extends AutoCloseable {
  /** Stops the notifications of this registration. */
  @Override
  void close();
}
