package io.redlock.spring.boot;

import io.redlock.spi.LockNode;
import io.redlock.spi.NodeUri;
import java.util.List;
import java.util.Objects;

/**
 * The {@link LockNode}s the auto-configuration opened from {@code redlock.nodes}, kept so that the
 * health indicator can ask each for its status and clock ({@link LockNode#status()}, {@link
 * LockNode#serverTime()}), which the {@link io.redlock.Redlock} API does not expose.
 *
 * <p>It only lends them: the Redlock owns the nodes and closes them when it is closed (once), and
 * the auto-configuration closes them itself if the Redlock could not be built. Nothing here closes
 * anything. Empty when the application brought its own Redlock.
 */
final class RedlockNodeHandles {
  private volatile List<LockNode> nodes = List.of();

  /** The nodes handed to the Redlock, in order; empty if none (yet). */
  List<LockNode> nodes() {
    return nodes;
  }

  /** Called once the Redlock that owns {@code opened} was built. */
  void adopt(List<LockNode> opened) {
    this.nodes = List.copyOf(Objects.requireNonNull(opened, "opened"));
  }

  @Override
  public String toString() {
    return "RedlockNodeHandles"
        + nodes.stream().map(n -> NodeUri.redact(String.valueOf(n.name()))).toList();
  }
}
