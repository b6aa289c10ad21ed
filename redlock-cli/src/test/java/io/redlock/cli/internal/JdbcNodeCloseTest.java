package io.redlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.jdbc.JdbcLockNode;
import io.redlock.spi.Reply;
import io.redlock.testservers.FreePorts;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The tool closes its nodes on the way out: a JDBC node whose database is down must not hold the
 * exit (HikariCP's shutdown and the node's workers waited for a connection that could not come,
 * about 4 s in all).
 */
@DisplayName("Closing a JDBC node whose database is down")
class JdbcNodeCloseTest {
  @Test
  @DisplayName("returns at once, though a call is still waiting for a connection")
  void closeIsPrompt() {
    String url = "jdbc:postgresql://127.0.0.1:" + FreePorts.find() + "/nowhere?user=u&password=p";
    JdbcLockNode node = JdbcLockNode.builder(url).build();
    Reply<Boolean> pending = node.release("close-test", "token");
    try {
      pending.await(Duration.ofMillis(200));
    } catch (RuntimeException expected) {
      // nothing listens there: the call waits for a connection until HikariCP's timeout
    }

    long t0 = System.nanoTime();
    node.close();
    long millis = Duration.ofNanos(System.nanoTime() - t0).toMillis();

    assertThat(millis).as("close() on a node that is down").isLessThan(1_000);
  }
}
