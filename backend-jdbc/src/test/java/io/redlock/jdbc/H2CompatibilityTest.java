package io.redlock.jdbc;

import io.redlock.spi.LockNode;
import io.redlock.tck.KeyInspector;
import io.redlock.tck.LockNodeCompatibilityKit;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;

@DisplayName("TCK on H2 (in-process, in memory)")
class H2CompatibilityTest extends LockNodeCompatibilityKit {
  private static final String URL = TestDatabases.h2Url("tck");

  @Override
  protected LockNode createNode() {
    return JdbcLockNode.builder(URL).createTable(true).build();
  }

  @Override
  protected Optional<KeyInspector> keyInspector() {
    return Optional.of(TestDatabases.inspector(URL, "redlock_locks"));
  }

  /**
   * An in-memory database's "crash": {@code SHUTDOWN} drops it with everything in it, and the next
   * connection to the URL opens a new, empty one, as a restarted H2 process would.
   */
  @Override
  protected boolean restartStore() {
    TestDatabases.execute(URL, "SHUTDOWN");
    return true;
  }

  @Override
  protected Optional<LockNode> createUnreachableNode() {
    // H2's TCP client against a port where no H2 server listens
    return Optional.of(
        JdbcLockNode.builder(
                "jdbc:h2:tcp://127.0.0.1:" + TestDatabases.closedPort() + "/mem:nowhere")
            .build());
  }
}
