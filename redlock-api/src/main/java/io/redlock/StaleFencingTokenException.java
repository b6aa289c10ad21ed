package io.redlock;

/**
 * A write was refused because its fencing token is lower than one the protected resource has
 * already accepted: a newer lease on the resource exists, so the lease that carries this token is
 * no longer the holder (it paused or ran past its validity). Retrying with the same token will not
 * help; stop the work, and acquire a new lease if it must still be done.
 */
public class StaleFencingTokenException extends RedlockNonTransientException {
  private final String resource;
  private final long token;
  private final long highestAccepted;

  /**
   * @param resource the protected resource
   * @param token the refused token
   * @param highestAccepted the highest token the resource had accepted
   */
  public StaleFencingTokenException(String resource, long token, long highestAccepted) {
    super(
        null,
        "fencing token "
            + token
            + " for '"
            + resource
            + "' is stale: token "
            + highestAccepted
            + " was accepted already, so a newer lease exists; stop this work (acquire a new"
            + " lease if it must still be done)",
        null);
    this.resource = resource;
    this.token = token;
    this.highestAccepted = highestAccepted;
  }

  /** The protected resource. */
  public String resource() {
    return resource;
  }

  /** The refused token. */
  public long token() {
    return token;
  }

  /** The highest token the resource had accepted when this one was refused. */
  public long highestAccepted() {
    return highestAccepted;
  }
}
