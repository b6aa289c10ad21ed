package io.redlock.spi;

/**
 * The answer of one node to a conditional insert.
 *
 * @param acquired true if this call set the key (it was absent or expired)
 * @param fence for {@link LockNode#tryAcquireFenced}: the key's fencing counter after this
 *     acquisition incremented it (positive); 0 when not acquired or not asked for
 */
public record AcquireResult(boolean acquired, long fence) {
  /** The key was absent or expired and now holds the caller's token. */
  public static final AcquireResult ACQUIRED = new AcquireResult(true, 0);

  /** The key holds another token that has not expired. */
  public static final AcquireResult HELD = new AcquireResult(false, 0);

  /** Validates. */
  public AcquireResult {
    if (fence < 0 || (!acquired && fence != 0)) {
      throw new IllegalArgumentException(
          "fence must be positive for an acquired fenced key and 0 otherwise, got "
              + fence
              + " (acquired="
              + acquired
              + ")");
    }
  }

  /** {@link #ACQUIRED} or {@link #HELD}. */
  public static AcquireResult of(boolean acquired) {
    return acquired ? ACQUIRED : HELD;
  }

  /** Acquired, with the key's fencing counter after this acquisition incremented it. */
  public static AcquireResult acquired(long fence) {
    if (fence <= 0) {
      throw new IllegalArgumentException("a fencing counter must be positive, got " + fence);
    }
    return new AcquireResult(true, fence);
  }
}
