package io.redlock.jdbc;

import io.redlock.spi.LockNode;
import io.redlock.tck.KeyInspector;
import io.redlock.tck.LockNodeCompatibilityKit;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;

/**
 * The kit on a SQLite file. {@code restartStore()} keeps its default (the rules that need it skip):
 * SQLite has no server process to crash, and the store it is, the file in the machine's page cache,
 * restarts only with the machine.
 */
@DisplayName("TCK on SQLite (a file under target/)")
class SqliteCompatibilityTest extends LockNodeCompatibilityKit {
  private static final String URL = TestDatabases.sqliteUrl("tck");

  @Override
  protected LockNode createNode() {
    return JdbcLockNode.builder(URL).createTable(true).build();
  }

  @Override
  protected Optional<KeyInspector> keyInspector() {
    // busy_timeout: the backdoor reads while the nodes write
    return Optional.of(TestDatabases.inspector(URL + "?busy_timeout=5000", "redlock_locks"));
  }

  @Override
  protected Optional<LockNode> createUnreachableNode() {
    // a file in a folder that does not exist cannot be opened
    return Optional.of(
        JdbcLockNode.builder("jdbc:sqlite:/nonexistent-redlock-dir/locks.db")
            .connectionTimeout(java.time.Duration.ofSeconds(1))
            .build());
  }
}
