package io.redlock.spi;

/**
 * The answer of one node to a conditional insert.
 *
 * @param acquired true if this call set the key (it was absent or expired)
 */
public record AcquireResult(boolean acquired) {
  /** The key was absent or expired and now holds the caller's token. */
  public static final AcquireResult ACQUIRED = new AcquireResult(true);

  /** The key holds another token that has not expired. */
  public static final AcquireResult HELD = new AcquireResult(false);

  /** {@link #ACQUIRED} or {@link #HELD}. */
  public static AcquireResult of(boolean acquired) {
    return acquired ? ACQUIRED : HELD;
  }
}
