package io.redlock.redis.internal;

import io.redlock.redis.RedisLockNode;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import java.util.Set;

/**
 * Opens Redis nodes for {@code redis://} and {@code rediss://} URIs; registered for {@link
 * java.util.ServiceLoader} in {@code META-INF/services/io.redlock.spi.LockNodeProvider}.
 */
public final class RedisLockNodeProvider implements LockNodeProvider {
  /** For {@link java.util.ServiceLoader}. */
  public RedisLockNodeProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("redis", "rediss");
  }

  @Override
  public LockNode open(NodeUri uri) {
    return RedisLockNode.fromUri(uri.raw());
  }
}
