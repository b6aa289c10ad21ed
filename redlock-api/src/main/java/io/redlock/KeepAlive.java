package io.redlock;

import java.time.Duration;

/**
 * How a lease is kept alive ({@link Lease#keepAlive(KeepAlive)}): extended on a shared scheduler
 * while it is held, and declared lost in time when the extensions keep failing.
 *
 * <p>Renewal stops, provably, when any of these happens: the lease is released or closed, the
 * Redlock is closed, the lease is lost, the maximum hold time is reached, or the application drops
 * every reference to the lease (the scheduler holds it weakly: a lease nobody can release any more
 * is not renewed for ever). A lease whose renewal stopped for the last two reasons simply expires
 * on the nodes.
 *
 * @param every how often to extend, or {@code null} for a third of the lease's TTL
 * @param lostMargin when extensions keep failing, the lease is declared lost ({@link Lease#onLost})
 *     while at least this much validity is left, so that the holder can stop before another client
 *     may take over; {@code null} for the default: a tenth of the TTL, at least 2 node timeouts
 * @param maxHold the longest the lease is kept alive in all, or {@code null} for no limit but
 *     {@link RedlockSettings#maxExtensions()}
 * @param ignoreMaxExtensions whether renewal may go past {@link RedlockSettings#maxExtensions()}
 *     (only with a {@code maxHold}, so that some bound remains)
 */
public record KeepAlive(
    Duration every, Duration lostMargin, Duration maxHold, boolean ignoreMaxExtensions) {

  /** Validates. */
  public KeepAlive {
    requirePositive("every", every);
    requirePositive("lostMargin", lostMargin);
    requirePositive("maxHold", maxHold);
    if (ignoreMaxExtensions && maxHold == null) {
      throw new IllegalArgumentException(
          "ignoreMaxExtensions needs a maxHold: a lease kept alive needs some bound");
    }
  }

  /** Extend every third of the TTL, the default margin, no maximum hold time. */
  public static KeepAlive defaults() {
    return new KeepAlive(null, null, null, false);
  }

  /** A copy that extends this often. */
  public KeepAlive every(Duration value) {
    return new KeepAlive(value, lostMargin, maxHold, ignoreMaxExtensions);
  }

  /** A copy that declares the lease lost with at least this much validity left. */
  public KeepAlive lostMargin(Duration value) {
    return new KeepAlive(every, value, maxHold, ignoreMaxExtensions);
  }

  /** A copy that stops renewing after this long in all. */
  public KeepAlive maxHold(Duration value) {
    return new KeepAlive(every, lostMargin, value, ignoreMaxExtensions);
  }

  /** A copy that renews past {@link RedlockSettings#maxExtensions()}, up to the maximum hold. */
  public KeepAlive ignoringMaxExtensions() {
    return new KeepAlive(every, lostMargin, maxHold, true);
  }

  private static void requirePositive(String name, Duration value) {
    if (value != null && (value.isNegative() || value.isZero())) {
      throw new IllegalArgumentException(name + " must be positive, got " + value);
    }
  }
}
