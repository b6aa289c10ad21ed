package io.redlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.NodeTimeoutException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.Reply;
import io.redlock.testservers.MariaDbServer;
import io.redlock.testservers.PostgresServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A reply is awaited no longer than its caller's wait, whatever the database does meanwhile, and
 * the node carries on once the database answers again.
 */
@DisplayName("JDBC calls bounded by the caller's wait")
class BoundedCallsTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(15);

  private static String url(String database) {
    return switch (database) {
      // JDBC itself: by default the lock calls would move to the wire protocol
      case "postgresql" -> TestDatabases.postgres().jdbcUrl();
      case "mariadb" -> TestDatabases.mariadb().jdbcUrl();
      default -> throw new IllegalArgumentException(database);
    };
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"postgresql", "mariadb"})
  @DisplayName("a statement stuck behind a row lock is given up at the caller's wait")
  void boundedByTheWait(String database) throws Exception {
    String url = url(database);
    String table = TestDatabases.uniqueTable("inline");
    try (JdbcLockNode node =
            JdbcLockNode.builder(url)
                .table(table)
                .createTable(true)
                .queryTimeout(Duration.ofSeconds(30))
                .build();
        Connection blocker = DriverManager.getConnection(url)) {
      assertThat(node.tryAcquire("k", "holder", TTL).await(WAIT).acquired()).isTrue();
      blocker.setAutoCommit(false);
      try (Statement s = blocker.createStatement()) {
        s.executeQuery("SELECT * FROM " + table + " FOR UPDATE").close();
      }

      Reply<AcquireResult> reply = node.tryAcquire("k", "contender", TTL);
      long start = System.nanoTime();
      assertThatThrownBy(() -> reply.await(Duration.ofMillis(400)))
          .isInstanceOf(NodeTimeoutException.class)
          .hasMessageContaining(node.name());
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      // far below the 30 s statement timeout: the wait bounded the call
      assertThat(took).isLessThan(Duration.ofSeconds(10));
      blocker.rollback();

      // the node carries on (a connection broken by the timeout is replaced)
      assertThat(node.release("k", "holder").await(WAIT)).isTrue();
      Reply<AcquireResult> again = node.tryAcquire("k", "next", TTL);
      assertThat(again.await(WAIT).acquired()).isTrue();
      assertThat(node.release("k", "next").await(WAIT)).isTrue();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"postgresql", "mariadb"})
  @DisplayName(
      "on a database that stops answering, an awaited call ends close to its wait, the"
          + " validation of an idle connection included")
  void boundedWhenTheDatabaseStops(String database) throws Exception {
    PostgresServer postgres = database.equals("postgresql") ? PostgresServer.startLocal() : null;
    MariaDbServer mariadb = postgres == null ? MariaDbServer.startLocal() : null;
    String url = postgres != null ? postgres.jdbcUrl() : mariadb.jdbcUrl();
    Runnable pause = postgres != null ? postgres::pause : mariadb::pause;
    Runnable resume = postgres != null ? postgres::resume : mariadb::resume;
    Duration budget = Duration.ofMillis(150);
    try (AutoCloseable server = postgres != null ? postgres : mariadb;
        JdbcLockNode node =
            JdbcLockNode.builder(url)
                .table(TestDatabases.uniqueTable("stops"))
                .createTable(true)
                // HikariCP's validation timeout is then 2.5 s
                .connectionTimeout(Duration.ofSeconds(5))
                .build()) {
      assertThat(node.tryAcquire("warm", "w", TTL).await(WAIT).acquired()).isTrue();
      // first an idle connection, which the pool validates before lending it; then one that was
      // just used, and the statement itself meets the stopped database
      for (String idle : new String[] {"idle connection", "connection just used"}) {
        if (idle.equals("idle connection")) {
          Thread.sleep(700); // longer than the 500 ms for which HikariCP trusts a connection
        } else {
          assertThat(node.tryAcquire(idle, "w", TTL).await(WAIT).acquired()).isTrue();
        }
        pause.run();
        try {
          Reply<AcquireResult> reply = node.tryAcquire("k-" + idle, "t", TTL);
          long start = System.nanoTime();
          assertThatThrownBy(() -> reply.await(budget))
              .as(idle)
              .isInstanceOf(NodeTimeoutException.class)
              .hasMessageContaining(node.name());
          Duration took = Duration.ofNanos(System.nanoTime() - start);
          // generous for a busy machine: the point is that it is not the validation timeout
          assertThat(took).as(idle).isLessThan(budget.plusSeconds(1));
        } finally {
          resume.run();
        }
        // the node carries on: broken connections are replaced
        assertThat(acquireWithin(node, "after-" + idle)).isTrue();
      }
    }
  }

  /** Takes {@code key}, retrying transient failures for up to 30 s. */
  private static boolean acquireWithin(JdbcLockNode node, String key) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    RuntimeException last = null;
    for (int attempt = 0; attempt < 300 && System.nanoTime() - deadline < 0; attempt++) {
      try {
        return node.tryAcquire(key, "t", TTL).await(WAIT).acquired();
      } catch (io.redlock.RedlockTransientException e) {
        last = e;
        Thread.sleep(100);
      }
    }
    throw new AssertionError("no acquisition within 30 s", last);
  }
}
