package io.redlock.cli.plugin;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.LockNodes;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.Set;

/**
 * A third party's backend as the tool meets it on its class path, written before fencing counters
 * and status reports existed: scheme {@code nocaps}, wrapping any node URI ({@code
 * nocaps:jdbc:sqlite:/x.db}) and declaring neither capability. Registered only in the plugin
 * directory the tests build ({@code CliProcess.plugin}), never on the test class path.
 */
public final class NoCapabilitiesProvider implements LockNodeProvider {
  /** The scheme, and the prefix stripped to find the wrapped node's URI. */
  public static final String SCHEME = "nocaps";

  /** For ServiceLoader. */
  public NoCapabilitiesProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of(SCHEME);
  }

  @Override
  public LockNode open(NodeUri uri) {
    return new Node(LockNodes.discover().open(uri.raw().substring(SCHEME.length() + 1)));
  }

  /** The wrapped node's lock operations, and nothing optional. */
  private static final class Node implements LockNode {
    private final LockNode inner;

    Node(LockNode inner) {
      this.inner = inner;
    }

    @Override
    public String name() {
      return SCHEME + ":" + inner.name();
    }

    @Override
    public NodeCapabilities capabilities() {
      return new NodeCapabilities(inner.capabilities().ttlPrecision());
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      return inner.tryAcquire(key, token, ttl);
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return inner.release(key, token);
    }

    @Override
    public Reply<Boolean> extend(String key, String token, Duration ttl) {
      return inner.extend(key, token, ttl);
    }

    @Override
    public void close() {
      inner.close();
    }
  }
}
