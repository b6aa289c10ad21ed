package io.redlock.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * Who holds a key on one node, as {@link LockNode#inspect} reads it.
 *
 * @param token the holder's token (the lease's {@code token()}), which {@link LockNode#release}
 *     needs to free the key
 * @param remainingTtl how long until the key expires on this node, by the store's clock
 */
public record KeyHolder(String token, Duration remainingTtl) {
  /** Validates. */
  public KeyHolder {
    Objects.requireNonNull(token, "token");
    Objects.requireNonNull(remainingTtl, "remainingTtl");
    if (remainingTtl.isNegative()) {
      throw new IllegalArgumentException("remainingTtl must not be negative, got " + remainingTtl);
    }
  }
}
