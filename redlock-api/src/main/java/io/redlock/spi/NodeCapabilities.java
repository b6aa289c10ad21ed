package io.redlock.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * What a node declares about itself. Capabilities are declared here, never discovered by catching
 * {@code UnsupportedOperationException}.
 *
 * @param ttlPrecision the smallest TTL step the store honours (1 ms for Redis {@code PX}); TTLs
 *     below it are rejected
 */
public record NodeCapabilities(Duration ttlPrecision) {
  /** Validates. */
  public NodeCapabilities {
    Objects.requireNonNull(ttlPrecision, "ttlPrecision");
    if (ttlPrecision.isNegative() || ttlPrecision.isZero()) {
      throw new IllegalArgumentException("ttlPrecision must be positive, got " + ttlPrecision);
    }
  }

  /** Millisecond precision, no optional features. */
  public static NodeCapabilities millisecondPrecision() {
    return new NodeCapabilities(Duration.ofMillis(1));
  }
}
