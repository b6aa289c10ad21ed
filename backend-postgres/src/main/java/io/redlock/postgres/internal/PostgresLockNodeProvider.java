package io.redlock.postgres.internal;

import io.redlock.postgres.PostgresLockNode;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import java.util.Set;

/**
 * Opens {@link PostgresLockNode}s for {@code postgresql://} and {@code postgres://} URIs (libpq's
 * form); registered for {@link java.util.ServiceLoader} in {@code
 * META-INF/services/io.redlock.spi.LockNodeProvider}.
 */
public final class PostgresLockNodeProvider implements LockNodeProvider {
  /** For {@link java.util.ServiceLoader}. */
  public PostgresLockNodeProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("postgresql", "postgres");
  }

  @Override
  public LockNode open(NodeUri uri) {
    return PostgresLockNode.fromUri(uri);
  }
}
