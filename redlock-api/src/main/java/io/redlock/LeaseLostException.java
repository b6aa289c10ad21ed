package io.redlock;

/**
 * Thrown by {@link Lease#checkValid()} once a lease is lost or has run out: other clients may hold
 * the resource now, so work under the lease must stop.
 */
public class LeaseLostException extends RedlockException {
  private final transient LeaseLost lost;

  /**
   * @param lost why the lease was lost
   */
  public LeaseLostException(LeaseLost lost) {
    super(null, lost.toString() + "; stop the work it protects", null);
    this.lost = lost;
  }

  /** Why the lease was lost. */
  public LeaseLost lost() {
    return lost;
  }
}
