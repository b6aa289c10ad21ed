package io.redlock;

import java.time.Duration;
import java.util.List;

/**
 * A lock could not be acquired within the allowed attempts or waiting time. The message tells
 * whether the resource was held by someone else or whether too few nodes could be reached, and
 * {@link #unreachableNodes()} lists the nodes that failed on the last attempt.
 */
public class LockTimeoutException extends RedlockTransientException {
  private final String resource;
  private final Duration waited;
  private final List<String> unreachableNodes;

  /**
   * @param resource the resource that could not be locked
   * @param waited how long the caller waited in total
   * @param detail why the last attempt failed
   * @param unreachableNodes nodes (redacted) that could not be asked on the last attempt
   * @param cause the failure of one unreachable node, or {@code null}
   */
  public LockTimeoutException(
      String resource,
      Duration waited,
      String detail,
      List<String> unreachableNodes,
      Throwable cause) {
    super(
        null,
        "could not lock '" + resource + "' within " + waited.toMillis() + " ms: " + detail,
        cause);
    this.resource = resource;
    this.waited = waited;
    this.unreachableNodes = List.copyOf(unreachableNodes);
  }

  /** The resource that could not be locked. */
  public String resource() {
    return resource;
  }

  /** How long the caller waited in total. */
  public Duration waited() {
    return waited;
  }

  /** Nodes (redacted) that could not be asked on the last attempt; empty if all answered. */
  public List<String> unreachableNodes() {
    return unreachableNodes;
  }

  /** True when the last attempt failed because too few nodes answered, not because of a holder. */
  public boolean quorumUnreachable() {
    return !unreachableNodes.isEmpty();
  }
}
