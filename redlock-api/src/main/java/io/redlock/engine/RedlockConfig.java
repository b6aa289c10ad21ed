package io.redlock.engine;

import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import java.util.List;
import java.util.Objects;

/**
 * Everything an engine needs to build a {@link io.redlock.Redlock}: passed from {@link
 * io.redlock.RedlockBuilder} to the {@link RedlockEngineProvider}.
 *
 * @param nodes the nodes, owned by the Redlock from now on
 * @param settings timing and retry settings
 * @param ticker the monotonic clock
 * @param listener hears what the Redlock does ({@link io.redlock.RedlockListener#NONE} for none)
 */
public record RedlockConfig(
    List<LockNode> nodes,
    RedlockSettings settings,
    Ticker ticker,
    io.redlock.RedlockListener listener) {
  /** Validates and copies. */
  public RedlockConfig {
    nodes = List.copyOf(nodes);
    if (nodes.isEmpty()) {
      throw new IllegalArgumentException("at least one node is needed");
    }
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(ticker, "ticker");
    Objects.requireNonNull(listener, "listener");
  }
}
