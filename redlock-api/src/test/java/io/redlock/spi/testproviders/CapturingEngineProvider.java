package io.redlock.spi.testproviders;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.RedlockSettings;
import io.redlock.engine.RedlockConfig;
import io.redlock.engine.RedlockEngineProvider;
import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * A test engine that only records what the builder gave it, so that discovery can be checked in
 * this module, which cannot depend on the real engine. It does not lock anything.
 */
public final class CapturingEngineProvider implements RedlockEngineProvider {
  /** When set, {@link #create} fails, as a broken engine would. */
  public static volatile boolean failNext;

  @Override
  public Redlock create(RedlockConfig config) {
    if (failNext) {
      failNext = false;
      throw new IllegalStateException("engine failed on purpose");
    }
    return new Captured(config);
  }

  /** The Redlock handed back: exposes the config it was built from. */
  public static final class Captured implements Redlock {
    private final RedlockConfig config;

    Captured(RedlockConfig config) {
      this.config = config;
    }

    public RedlockConfig config() {
      return config;
    }

    @Override
    public Optional<Lease> tryAcquire(String resource, Duration ttl) {
      throw new UnsupportedOperationException("test engine: records the configuration only");
    }

    @Override
    public Lease acquire(String resource, Duration ttl, Duration maxWait) {
      throw new UnsupportedOperationException("test engine: records the configuration only");
    }

    @Override
    public java.util.concurrent.CompletableFuture<Optional<Lease>> tryAcquireAsync(
        String resource, Duration ttl) {
      throw new UnsupportedOperationException("test engine: records the configuration only");
    }

    @Override
    public java.util.concurrent.CompletableFuture<Lease> acquireAsync(
        String resource, Duration ttl, Duration maxWait) {
      throw new UnsupportedOperationException("test engine: records the configuration only");
    }

    @Override
    public Lease acquireAll(
        java.util.Collection<String> resources, Duration ttl, Duration maxWait) {
      throw new UnsupportedOperationException("test engine: records the configuration only");
    }

    @Override
    public Lease resume(String resource, String token, Duration ttl) {
      throw new UnsupportedOperationException("test engine: records the configuration only");
    }

    @Override
    public io.redlock.LeaseLock asLock(
        String resource, Duration ttl, io.redlock.KeepAlive keepAlive) {
      throw new UnsupportedOperationException("test engine: records the configuration only");
    }

    @Override
    public List<String> nodes() {
      return config.nodes().stream().map(LockNode::name).toList();
    }

    @Override
    public List<io.redlock.NodeHealth> health() {
      return List.of();
    }

    @Override
    public List<io.redlock.NodeReport> probe(int rounds, Duration timeout) {
      throw new UnsupportedOperationException("test engine: records the configuration only");
    }

    @Override
    public RedlockSettings settings() {
      return config.settings();
    }

    @Override
    public void close() {
      config.nodes().forEach(LockNode::close);
    }
  }
}
