package io.redlock.jdbc;

import io.redlock.spi.LockNode;
import io.redlock.tck.KeyInspector;
import io.redlock.tck.LockNodeCompatibilityKit;
import io.redlock.testservers.PostgresServer;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;

/** With release notifications on, so that the kit's R14 rules run too. */
@DisplayName("TCK on a real PostgreSQL server, JDBC")
class PostgresCompatibilityTest extends LockNodeCompatibilityKit {
  private static String url;
  private static final String TABLE = TestDatabases.uniqueTable("tck");

  @BeforeAll
  static void startServer() {
    url = TestDatabases.postgres().jdbcUrl();
  }

  @Override
  protected LockNode createNode() {
    return JdbcLockNode.builder(url)
        .table(TABLE)
        .createTable(true)
        .releaseNotifications(true)
        .build();
  }

  @Override
  protected Optional<KeyInspector> keyInspector() {
    return Optional.of(TestDatabases.inspector(url, TABLE));
  }

  @Override
  protected Optional<LockNode> createUnreachableNode() {
    return Optional.of(
        JdbcLockNode.builder(
                "jdbc:postgresql://127.0.0.1:"
                    + TestDatabases.closedPort()
                    + "/postgres?user=postgres&password="
                    + PostgresServer.PASSWORD)
            .table(TABLE)
            .build());
  }

  @Override
  protected Optional<String> configuredSecret() {
    return Optional.of(PostgresServer.PASSWORD);
  }

  /** Crashes the shared local server the way {@code pg_ctl -m immediate stop} does, restarts it. */
  @Override
  protected boolean restartStore() {
    PostgresServer server = TestDatabases.postgres();
    if (!server.isLocal()) {
      return false; // a server given by REDLOCK_TEST_POSTGRES is not ours to crash
    }
    server.crash();
    server.restart();
    return true;
  }
}
