package io.redlock;

import java.time.Duration;

/** A node did not answer within the time it was given. Counts as a "no" vote for a quorum. */
public class NodeTimeoutException extends RedlockTransientException {
  private final Duration timeout;

  /**
   * @param node the node that did not answer (redacted)
   * @param timeout how long it was given
   */
  public NodeTimeoutException(String node, Duration timeout) {
    this(
        node,
        timeout,
        "no answer within "
            + timeout.toMillis()
            + " ms; check that the node is up and reachable, or raise the per-node timeout");
  }

  /**
   * @param node the node that did not answer (redacted)
   * @param timeout how long it was given
   * @param message what kept it, and what to do
   */
  public NodeTimeoutException(String node, Duration timeout, String message) {
    super(node, message, null, false); // common, and its origin is of no interest
    this.timeout = timeout;
  }

  /** How long the node was given to answer. */
  public Duration timeout() {
    return timeout;
  }
}
