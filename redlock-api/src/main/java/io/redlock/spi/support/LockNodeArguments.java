package io.redlock.spi.support;

import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import java.time.Duration;

/**
 * The argument checks every {@link LockNode} must make, with the messages users see. Backends call
 * these first thing in each method so that all backends reject the same input the same way.
 */
public final class LockNodeArguments {
  private LockNodeArguments() {}

  /** Rejects a null or empty key. */
  public static String requireKey(String key) {
    if (key == null || key.isEmpty()) {
      throw new IllegalArgumentException(
          "lock key must be a non-empty string (got " + (key == null ? "null" : "\"\"") + ")");
    }
    return key;
  }

  /** Rejects a null or empty token. */
  public static String requireToken(String token) {
    if (token == null || token.isEmpty()) {
      throw new IllegalArgumentException(
          "lock token must be a non-empty string (got " + (token == null ? "null" : "\"\"") + ")");
    }
    return token;
  }

  /**
   * Rejects a null, zero, negative or too-fine TTL (below {@link NodeCapabilities#ttlPrecision()}),
   * and returns it unchanged. Rounding is the store's: up to its precision, never down.
   */
  public static Duration requireTtl(Duration ttl, NodeCapabilities capabilities) {
    if (ttl == null) {
      throw new IllegalArgumentException("ttl must not be null");
    }
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException(
          "ttl must be positive, got " + ttl.toMillis() + " ms (" + ttl + ")");
    }
    Duration precision = capabilities.ttlPrecision();
    if (ttl.compareTo(precision) < 0) {
      throw new IllegalArgumentException(
          "ttl "
              + ttl
              + " is below this node's precision of "
              + precision
              + "; use a TTL of at least "
              + precision.toMillis()
              + " ms");
    }
    return ttl;
  }

  /** Rejects a fencing value for {@code raiseFence} that is not positive, and returns it. */
  public static long requireFence(long atLeast) {
    if (atLeast <= 0) {
      throw new IllegalArgumentException(
          "atLeast must be a positive fencing counter value, got " + atLeast);
    }
    return atLeast;
  }
}
