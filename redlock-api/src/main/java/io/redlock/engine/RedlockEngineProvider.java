package io.redlock.engine;

import io.redlock.Redlock;

/**
 * How {@link io.redlock.RedlockBuilder} finds the engine, through {@link java.util.ServiceLoader}.
 * Implemented once, by {@code io.redlock:redlock-engine}; backends do not implement it.
 */
public interface RedlockEngineProvider {
  /** Builds a Redlock over the configured nodes. */
  Redlock create(RedlockConfig config);
}
