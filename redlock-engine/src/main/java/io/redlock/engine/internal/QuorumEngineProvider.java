package io.redlock.engine.internal;

import io.redlock.Redlock;
import io.redlock.engine.RedlockConfig;
import io.redlock.engine.RedlockEngineProvider;

/**
 * The engine's entry point for {@link java.util.ServiceLoader}; registered in {@code
 * META-INF/services/io.redlock.engine.RedlockEngineProvider}. Not meant to be called directly: use
 * {@link Redlock#builder()}.
 */
public final class QuorumEngineProvider implements RedlockEngineProvider {

  /** Called by {@link java.util.ServiceLoader}. */
  public QuorumEngineProvider() {}

  @Override
  public Redlock create(RedlockConfig config) {
    return new QuorumRedlock(config.nodes(), config.settings(), config.ticker(), config.listener());
  }
}
