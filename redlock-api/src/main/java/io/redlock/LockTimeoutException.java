package io.redlock;

import java.time.Duration;
import java.util.List;

/**
 * A lock could not be acquired within the allowed attempts or waiting time. The message tells
 * whether the resource was held by someone else or whether too few nodes could be reached, and
 * {@link #unreachableNodes()} lists the nodes that failed on the last attempt.
 */
public class LockTimeoutException extends RedlockTransientException {
  /** Why the last attempt failed. */
  public enum Reason {
    /** Enough nodes answered, and too many of them said another client holds the resource. */
    HELD,
    /** Too few nodes answered to form a quorum (down, unreachable, or too slow to answer). */
    UNREACHABLE,
    /** Enough nodes granted, but restart quarantine left too few of their votes to count. */
    RESTART_QUARANTINE,
    /** Enough nodes granted, but too few confirmed the fencing token in time. */
    FENCING_NOT_CONFIRMED,
    /** A quorum granted, but acquisition took so long that too little validity was left. */
    TOO_SLOW
  }

  private final Reason reason;
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
    this(
        resource,
        waited,
        unreachableNodes.isEmpty() ? Reason.HELD : Reason.UNREACHABLE,
        detail,
        unreachableNodes,
        cause);
  }

  /**
   * @param resource the resource that could not be locked
   * @param waited how long the caller waited in total
   * @param reason why the last attempt failed
   * @param detail why the last attempt failed, in words
   * @param unreachableNodes nodes (redacted) that could not be asked on the last attempt
   * @param cause the failure of one unreachable node, or {@code null}
   */
  public LockTimeoutException(
      String resource,
      Duration waited,
      Reason reason,
      String detail,
      List<String> unreachableNodes,
      Throwable cause) {
    super(
        null,
        "could not lock '" + resource + "' within " + waited.toMillis() + " ms: " + detail,
        cause);
    this.reason = java.util.Objects.requireNonNull(reason, "reason");
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

  /** Why the last attempt failed. */
  public Reason reason() {
    return reason;
  }

  /**
   * True when the last attempt failed because too few nodes answered ({@link Reason#UNREACHABLE}),
   * not because of a holder; some nodes may be unreachable in other cases too, see {@link
   * #unreachableNodes()}.
   */
  public boolean quorumUnreachable() {
    return reason == Reason.UNREACHABLE;
  }
}
