package io.redlock.jdbc.internal;

import io.redlock.jdbc.JdbcLockNode;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import java.util.Set;

/** Opens {@link JdbcLockNode}s for JDBC URLs found through {@link java.util.ServiceLoader}. */
public final class JdbcLockNodeProvider implements LockNodeProvider {
  private static final Set<String> SCHEMES =
      Set.of("jdbc:postgresql", "jdbc:mariadb", "jdbc:mysql", "jdbc:sqlite", "jdbc:h2");

  /** Used by {@link java.util.ServiceLoader}. */
  public JdbcLockNodeProvider() {}

  @Override
  public Set<String> schemes() {
    return SCHEMES;
  }

  @Override
  public LockNode open(NodeUri uri) {
    if (!SCHEMES.contains(uri.scheme())) {
      throw new IllegalArgumentException(
          "the JDBC provider opens " + SCHEMES + " URLs, not " + uri.redacted());
    }
    return JdbcLockNode.fromUri(uri);
  }
}
