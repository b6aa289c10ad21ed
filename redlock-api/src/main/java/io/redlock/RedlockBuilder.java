package io.redlock;

import io.redlock.spi.LockNode;
import io.redlock.spi.RedlockConfig;
import io.redlock.spi.RedlockEngineProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

/** Builds a {@link Redlock}. Not thread-safe; obtain one from {@link Redlock#builder()}. */
public final class RedlockBuilder {
  private final List<LockNode> nodes = new ArrayList<>();
  private RedlockSettings settings = RedlockSettings.defaults();
  private Ticker ticker = Ticker.system();

  RedlockBuilder() {}

  /** Adds nodes. The Redlock owns them from now on and closes them when it is closed. */
  public RedlockBuilder nodes(LockNode... nodes) {
    return nodes(List.of(nodes));
  }

  /** Adds nodes. The Redlock owns them from now on and closes them when it is closed. */
  public RedlockBuilder nodes(List<? extends LockNode> nodes) {
    for (LockNode node : nodes) {
      this.nodes.add(Objects.requireNonNull(node, "node must not be null"));
    }
    return this;
  }

  /** Replaces all settings at once. */
  public RedlockBuilder settings(RedlockSettings settings) {
    this.settings = Objects.requireNonNull(settings, "settings must not be null");
    return this;
  }

  /** Fraction of the TTL allowed for clock drift (default 0.01). */
  public RedlockBuilder driftFactor(double driftFactor) {
    settings = settings.withDriftFactor(driftFactor);
    return this;
  }

  /** Constant allowance for drift and scheduling (default 2 ms). */
  public RedlockBuilder driftBuffer(Duration driftBuffer) {
    settings = settings.withDriftBuffer(driftBuffer);
    return this;
  }

  /** How long one node may take to answer one call (default: TTL/200 within [10 ms, 1 s]). */
  public RedlockBuilder nodeTimeout(Duration nodeTimeout) {
    settings = settings.withNodeTimeout(Objects.requireNonNull(nodeTimeout, "nodeTimeout"));
    return this;
  }

  /** Attempts made by {@code tryAcquire} and the random pause between them. */
  public RedlockBuilder retry(int attempts, Duration delayMin, Duration delayMax) {
    settings = settings.withRetry(attempts, delayMin, delayMax);
    return this;
  }

  /** Minimum validity a fresh lease must have, else it is given up at once (default 1 ms). */
  public RedlockBuilder minValidity(Duration minValidity) {
    settings = settings.withMinValidity(minValidity);
    return this;
  }

  /** How many times one lease may be extended (default 10,000). */
  public RedlockBuilder maxExtensions(int maxExtensions) {
    settings = settings.withMaxExtensions(maxExtensions);
    return this;
  }

  /** The monotonic clock for elapsed time (default {@link Ticker#system()}); for tests. */
  public RedlockBuilder ticker(Ticker ticker) {
    this.ticker = Objects.requireNonNull(ticker, "ticker must not be null");
    return this;
  }

  /**
   * Builds the Redlock.
   *
   * @throws IllegalStateException if no node was given
   * @throws RedlockNonTransientException if no engine is on the class path
   */
  public Redlock build() {
    if (nodes.isEmpty()) {
      throw new IllegalStateException(
          "a Redlock needs at least one node: call nodes(...) before build()"
              + " (use an odd number, 3 or 5, to survive the loss of 1 or 2)");
    }
    RedlockConfig config = new RedlockConfig(nodes, settings, ticker);
    return findEngine().create(config);
  }

  private static RedlockEngineProvider findEngine() {
    ServiceLoader<RedlockEngineProvider> loader =
        ServiceLoader.load(RedlockEngineProvider.class, RedlockBuilder.class.getClassLoader());
    Iterator<RedlockEngineProvider> it = loader.iterator();
    ServiceConfigurationError broken = null;
    while (true) {
      try {
        if (!it.hasNext()) {
          break;
        }
        return it.next();
      } catch (ServiceConfigurationError e) {
        broken = e; // one broken provider must not hide a good one
      }
    }
    throw new RedlockNonTransientException(
        null,
        "no Redlock engine on the class path: add the dependency io.redlock:redlock-engine",
        broken);
  }
}
