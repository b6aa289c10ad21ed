package io.redlock;

import java.util.List;

/**
 * A lock cannot be had because nodes fail in a way no retry will fix (a wrong password, a missing
 * table, an unknown host): too many of them for a quorum, or any of them with {@link
 * RedlockBuilder#strictNodes(boolean) strictNodes}. Thrown at once, without waiting or retrying;
 * nothing is held. The message names each node and its cause.
 */
public class NodesMisconfiguredException extends RedlockNonTransientException {
  private final List<NodeFailure> failures;

  /**
   * @param resource the resource that could not be locked, or null when the Redlock was being built
   * @param why why these failures stop the acquisition
   * @param failures the nodes that failed non-transiently, with their causes
   */
  public NodesMisconfiguredException(String resource, String why, List<NodeFailure> failures) {
    super(
        null,
        (resource == null ? "cannot build the Redlock: " : "cannot lock '" + resource + "': ")
            + why
            + ": "
            + String.join("; ", failures.stream().map(NodeFailure::toString).toList()),
        failures.isEmpty() ? null : failures.get(0).cause());
    this.failures = List.copyOf(failures);
  }

  /** The nodes that failed in a way a retry will not fix, with their causes, in node order. */
  public List<NodeFailure> failures() {
    return failures;
  }
}
