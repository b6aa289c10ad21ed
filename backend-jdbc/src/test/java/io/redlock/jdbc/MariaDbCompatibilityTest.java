package io.redlock.jdbc;

import io.redlock.spi.LockNode;
import io.redlock.tck.KeyInspector;
import io.redlock.tck.LockNodeCompatibilityKit;
import io.redlock.testservers.MariaDbServer;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;

@DisplayName("TCK on a real MariaDB server")
class MariaDbCompatibilityTest extends LockNodeCompatibilityKit {
  private static String url;
  private static final String TABLE = TestDatabases.uniqueTable("tck");

  @BeforeAll
  static void startServer() {
    url = TestDatabases.mariadb().jdbcUrl();
  }

  @Override
  protected LockNode createNode() {
    return JdbcLockNode.builder(url).table(TABLE).createTable(true).build();
  }

  @Override
  protected Optional<KeyInspector> keyInspector() {
    return Optional.of(TestDatabases.inspector(url, TABLE));
  }

  @Override
  protected Optional<LockNode> createUnreachableNode() {
    return Optional.of(
        JdbcLockNode.builder(
                "jdbc:mariadb://127.0.0.1:"
                    + TestDatabases.closedPort()
                    + "/redlock?user=redlock&password="
                    + MariaDbServer.PASSWORD)
            .table(TABLE)
            .build());
  }

  @Override
  protected Optional<String> configuredSecret() {
    return Optional.of(MariaDbServer.PASSWORD);
  }

  /** Kills the shared local server (SIGKILL) and starts it again on the same data. */
  @Override
  protected boolean restartStore() {
    MariaDbServer server = TestDatabases.mariadb();
    if (!server.isLocal()) {
      return false; // a server given by REDLOCK_TEST_MARIADB is not ours to kill
    }
    server.kill();
    server.restart();
    return true;
  }
}
