package io.redlock.engine.internal;

import io.redlock.RedlockSettings;
import java.time.Duration;
import java.util.random.RandomGenerator;

/**
 * One Redlock's time arithmetic: the checks of a TTL and a wait, the per-node timeout and drift
 * allowance of a TTL, and the random pauses between attempts.
 */
final class Timing {
  /** Largest random pause before retrying a split vote during which a release was reported. */
  static final long WAKEUP_JITTER_NANOS = 2_000_000;

  final RedlockSettings settings;
  private final RandomGenerator random;

  /** The coarsest TTL precision among the nodes: a TTL must suit every node. */
  private final Duration ttlPrecision;

  private final long precisionNanos;

  /** Validity a fresh lease needs: the configured minimum, and always more than zero. */
  final long minValidityNanos;

  /** Fencing and restart quarantine, which limit the TTL; or null. */
  private final Safety safety;

  /** Timings derived from the TTL used last; see {@link TtlTiming}. */
  private volatile TtlTiming lastTiming;

  Timing(RedlockSettings settings, Duration ttlPrecision, RandomGenerator random, Safety safety) {
    this.settings = settings;
    this.ttlPrecision = ttlPrecision;
    this.precisionNanos = saturatedNanos(ttlPrecision);
    this.minValidityNanos = Math.max(1, saturatedNanos(settings.minValidity()));
    this.random = random;
    this.safety = safety;
  }

  static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return d.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
  }

  static void checkResource(String resource) {
    if (resource == null) {
      throw new IllegalArgumentException("resource must not be null; name the thing to lock");
    }
    if (resource.isBlank()) {
      throw new IllegalArgumentException(
          "resource must not be empty or blank, got \""
              + resource
              + "\"; name the thing to lock, e.g. \"invoice-42\"");
    }
  }

  static long checkMaxWait(Duration maxWait) {
    if (maxWait == null || maxWait.isNegative()) {
      throw new IllegalArgumentException(
          "maxWait must not be "
              + (maxWait == null ? "null" : "negative, got " + maxWait)
              + "; pass Duration.ZERO for a single attempt");
    }
    return saturatedNanos(maxWait);
  }

  /** Checks the bound of {@link QuorumLease#releaseAwaitingLate}; in nanoseconds. */
  static long checkLateWait(Duration maxWait) {
    if (maxWait == null || maxWait.isNegative()) {
      throw new IllegalArgumentException(
          "maxWait must be zero or positive, got "
              + maxWait
              + "; pass how long to wait for late replies, e.g. Duration.ofSeconds(2)");
    }
    return Timing.saturatedNanos(maxWait);
  }

  /** Validates a TTL for acquire and extend; returns it in nanoseconds. */
  long checkTtl(Duration ttl) {
    if (ttl == null) {
      throw new IllegalArgumentException(
          "ttl must not be null; pass the lock's time to live, e.g. Duration.ofSeconds(10)");
    }
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException(
          "ttl must be positive, got " + ttl + "; pass e.g. Duration.ofSeconds(10)");
    }
    long ttlNanos;
    try {
      ttlNanos = ttl.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("ttl " + ttl + " is too long; use at most a few days", e);
    }
    if (ttl.compareTo(ttlPrecision) < 0) {
      throw new IllegalArgumentException(
          "ttl "
              + ttl
              + " is below the TTL precision of the nodes ("
              + ttlPrecision
              + "); use a TTL of at least "
              + ttlPrecision.toMillis()
              + " ms");
    }
    if (ttlNanos - driftNanos(ttl) < minValidityNanos) {
      double factor = settings.driftFactor();
      long needed =
          (long)
              Math.ceil(
                  (minValidityNanos + saturatedNanos(settings.driftBuffer()))
                      / (1 - factor)
                      / 1_000_000.0);
      throw new IllegalArgumentException(
          "ttl "
              + ttl
              + " leaves no validity: the drift allowance (ttl x driftFactor "
              + factor
              + " + driftBuffer "
              + settings.driftBuffer().toMillis()
              + " ms) and the minimum validity ("
              + settings.minValidity().toMillis()
              + " ms) take all of it; use a TTL well above "
              + needed
              + " ms");
    }
    if (safety != null) {
      safety.checkTtl(ttl);
    }
    return ttlNanos;
  }

  /**
   * The per-node wait for calls on a lock of this TTL, at most the TTL itself: an answer after it
   * is worthless (the key has expired), and the cap keeps deadline arithmetic from overflowing.
   */
  long nodeTimeoutNanos(Duration ttl) {
    return timing(ttl).nodeTimeoutNanos;
  }

  long driftNanos(Duration ttl) {
    return timing(ttl).driftNanos;
  }

  /**
   * The derived timings of the TTL used last. Nearly every caller uses one TTL for all its locks,
   * and deriving them costs more than a lock's whole CPU budget would like (Duration.dividedBy goes
   * through BigDecimal), so the last one is kept. Immutable, so a racy read is safe.
   */
  private record TtlTiming(Duration ttl, long nodeTimeoutNanos, long driftNanos) {}

  private TtlTiming timing(Duration ttl) {
    TtlTiming t = lastTiming;
    if (t == null || !t.ttl.equals(ttl)) {
      // A store may end a key up to one step of its TTL precision early (a coarse clock ticks
      // while the key is set): the validity discounts that step too.
      t =
          new TtlTiming(
              ttl,
              Math.min(saturatedNanos(settings.nodeTimeoutFor(ttl)), saturatedNanos(ttl)),
              saturatedNanos(settings.driftFor(ttl)) + precisionNanos);
      lastTiming = t;
    }
    return t;
  }

  long pickPauseNanos() {
    long min = saturatedNanos(settings.retryDelayMin());
    long max = saturatedNanos(settings.retryDelayMax());
    long span = max - min;
    if (span <= 0) {
      return min;
    }
    return min + random.nextLong(span == Long.MAX_VALUE ? span : span + 1);
  }

  long pickJitterNanos() {
    return random.nextLong(WAKEUP_JITTER_NANOS + 1);
  }
}
