package io.redlock.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * What a node declares about itself. Capabilities are declared here, never discovered by catching
 * {@code UnsupportedOperationException}: the engine calls an optional method only on nodes that
 * declare it.
 *
 * @param ttlPrecision the smallest TTL step the store honours (1 ms for Redis {@code PX}); TTLs
 *     below it are rejected
 * @param fencing the node implements {@link LockNode#tryAcquireFenced} and {@link
 *     LockNode#raiseFence}: a per-key counter that survives release and expiry
 * @param status the node implements {@link LockNode#status}: incarnation, uptime, durability
 * @param releaseNotifications the node implements {@link LockNode#onRelease}: it pushes a
 *     notification when a key is released, so that waiters need not poll
 * @param clock the node implements {@link LockNode#serverTime}: a fresh read of the store's own
 *     clock, for diagnostics such as {@code redlock doctor}'s clock offset (the engine never uses
 *     it)
 * @param inspection the node implements {@link LockNode#inspect}: who holds a key, and for how long
 *     (for operators' tools; the engine never uses it)
 */
public record NodeCapabilities(
    Duration ttlPrecision,
    boolean fencing,
    boolean status,
    boolean releaseNotifications,
    boolean clock,
    boolean inspection) {
  /** Validates. */
  public NodeCapabilities {
    Objects.requireNonNull(ttlPrecision, "ttlPrecision");
    if (ttlPrecision.isNegative() || ttlPrecision.isZero()) {
      throw new IllegalArgumentException("ttlPrecision must be positive, got " + ttlPrecision);
    }
  }

  /** A node with this precision and these features, and no key inspection. */
  public NodeCapabilities(
      Duration ttlPrecision,
      boolean fencing,
      boolean status,
      boolean releaseNotifications,
      boolean clock) {
    this(ttlPrecision, fencing, status, releaseNotifications, clock, false);
  }

  /** A node with this precision and these features, no clock reads and no key inspection. */
  public NodeCapabilities(
      Duration ttlPrecision, boolean fencing, boolean status, boolean releaseNotifications) {
    this(ttlPrecision, fencing, status, releaseNotifications, false, false);
  }

  /** A node with this precision, these features and no release notifications. */
  public NodeCapabilities(Duration ttlPrecision, boolean fencing, boolean status) {
    this(ttlPrecision, fencing, status, false, false, false);
  }

  /** A node with this precision and no optional features. */
  public NodeCapabilities(Duration ttlPrecision) {
    this(ttlPrecision, false, false, false, false, false);
  }

  /** Millisecond precision, no optional features. */
  public static NodeCapabilities millisecondPrecision() {
    return new NodeCapabilities(Duration.ofMillis(1));
  }

  /** A copy that declares fencing counters. */
  public NodeCapabilities withFencing() {
    return new NodeCapabilities(
        ttlPrecision, true, status, releaseNotifications, clock, inspection);
  }

  /** A copy that declares status reports. */
  public NodeCapabilities withStatus() {
    return new NodeCapabilities(
        ttlPrecision, fencing, true, releaseNotifications, clock, inspection);
  }

  /** A copy that declares release notifications ({@link LockNode#onRelease}). */
  public NodeCapabilities withReleaseNotifications() {
    return new NodeCapabilities(ttlPrecision, fencing, status, true, clock, inspection);
  }

  /** A copy that declares reads of the store's clock ({@link LockNode#serverTime}). */
  public NodeCapabilities withClock() {
    return new NodeCapabilities(
        ttlPrecision, fencing, status, releaseNotifications, true, inspection);
  }

  /** A copy that declares key inspection ({@link LockNode#inspect}). */
  public NodeCapabilities withInspection() {
    return new NodeCapabilities(ttlPrecision, fencing, status, releaseNotifications, clock, true);
  }
}
