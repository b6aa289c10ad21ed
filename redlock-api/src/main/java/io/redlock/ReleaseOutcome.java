package io.redlock;

import java.util.List;

/**
 * What a release achieved. Release goes to every node and never throws because a node is down.
 *
 * @param deleted nodes that deleted this lease's key
 * @param answered nodes that answered (deleted, or had no key with this token any more)
 * @param nodes all nodes of the quorum
 * @param failedNodes nodes (redacted) that could not be asked; their keys expire by TTL
 */
public record ReleaseOutcome(int deleted, int answered, int nodes, List<String> failedNodes) {
  /** Validates the counts. */
  public ReleaseOutcome {
    if (deleted < 0 || answered < deleted || nodes < answered) {
      throw new IllegalArgumentException(
          "inconsistent counts: deleted=" + deleted + " answered=" + answered + " nodes=" + nodes);
    }
    failedNodes = List.copyOf(failedNodes);
  }

  /** True when every node answered, so no key of this lease can be left behind. */
  public boolean complete() {
    return answered == nodes;
  }
}
