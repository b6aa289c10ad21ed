package io.redlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.redlock.NodeTimeoutException;
import io.redlock.NodesMisconfiguredException;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.testservers.MariaDbServer;
import io.redlock.testservers.PostgresServer;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A node the database refuses for a reason no retry cures (a wrong password, an unknown database, a
 * missing table) says so on its first call and every call after it, within a node timeout, instead
 * of looking like a node that does not answer; failures that a retry may cure stay transient.
 *
 * <p>The replies are awaited for 500 ms, the node timeouts the engine and the CLI use, while the
 * built-in pool's connection timeout stays at its default of 2 s: a failure seen after 500 ms would
 * come as a {@link NodeTimeoutException}.
 */
@DisplayName("JDBC connection failures")
class ConnectionFailuresTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration NODE_TIMEOUT = Duration.ofMillis(500);
  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final String WRONG = "wrong-secret-pw";

  private static String url(String database) {
    return switch (database) {
      case "postgresql" -> TestDatabases.postgres().jdbcUrl();
      case "mariadb" -> TestDatabases.mariadb().jdbcUrl();
      default -> throw new IllegalArgumentException(database);
    };
  }

  private static String password(String database) {
    return database.equals("postgresql") ? PostgresServer.PASSWORD : MariaDbServer.PASSWORD;
  }

  /**
   * Opens a connection the way the node will, and expects it to fail: the driver's classes are
   * loaded and its failure path has run once, so that the node's first attempt is not also the
   * JVM's first.
   */
  private static void warmUp(String url) {
    assertThatThrownBy(() -> DriverManager.getConnection(url).close())
        .isInstanceOf(SQLException.class);
  }

  /** The failure of a call awaited for a node timeout. */
  private static RedlockException failure(LockNode node) {
    Throwable t = catchThrowable(() -> node.tryAcquire("k", "t", TTL).await(NODE_TIMEOUT));
    assertThat(t).as("the failure of a call awaited for %s", NODE_TIMEOUT).isNotNull();
    return (RedlockException) t;
  }

  /** No message in the chain of causes shows {@code secret}. */
  private static void assertNotShown(Throwable error, String secret) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      assertThat(String.valueOf(t.getMessage())).doesNotContain(secret);
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"postgresql", "mariadb"})
  @DisplayName(
      "a wrong password fails the first call of a fresh node, and every call after it, as"
          + " non-transient within the node timeout")
  void wrongPassword(String database) {
    String url = url(database).replace(password(database), WRONG);
    warmUp(url);
    try (JdbcLockNode node = JdbcLockNode.builder(url).build()) {
      for (int call = 0; call < 3; call++) {
        RedlockException e = failure(node);
        assertThat(e)
            .as("call %d", call)
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageStartingWith(node.name() + ": ")
            .hasMessageContaining("authentication failed")
            .hasMessageContaining("check the user and password");
        if (database.equals("postgresql")) {
          assertThat(e).hasMessageContaining("SQLState 28P01");
        }
        assertThat(e.node()).contains(node.name());
        assertNotShown(e, WRONG);
        assertThat(node.name()).doesNotContain(WRONG);
      }
    }
  }

  @Test
  @DisplayName("an unknown database on PostgreSQL is non-transient within the node timeout")
  void unknownDatabasePostgres() {
    String url = url("postgresql").replace("/postgres?", "/no_such_db_here?");
    warmUp(url);
    try (JdbcLockNode node = JdbcLockNode.builder(url).build()) {
      for (int call = 0; call < 2; call++) {
        assertThat(failure(node))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageStartingWith(node.name() + ": ")
            .hasMessageContaining("does not exist")
            .hasMessageContaining("SQLState 3D000")
            .hasMessageNotContaining(PostgresServer.PASSWORD);
      }
    }
  }

  @Test
  @DisplayName("an unknown database on MariaDB is non-transient within the node timeout")
  void unknownDatabaseMariaDb() {
    // as root: a user without rights on the database is told "access denied" instead
    String url = TestDatabases.mariadb().adminJdbcUrl().replace("/redlock?", "/no_such_db_here?");
    assertThat(url).contains("/no_such_db_here?");
    warmUp(url);
    try (JdbcLockNode node = JdbcLockNode.builder(url).build()) {
      for (int call = 0; call < 2; call++) {
        assertThat(failure(node))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageStartingWith(node.name() + ": ")
            .hasMessageContaining("does not exist");
      }
    }
  }

  @Test
  @DisplayName("a missing table is non-transient within the node timeout, on every call")
  void missingTable() {
    String table = TestDatabases.uniqueTable("absent");
    try (JdbcLockNode node = JdbcLockNode.builder(url("postgresql")).table(table).build()) {
      for (int call = 0; call < 2; call++) {
        assertThat(failure(node))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageStartingWith(node.name() + ": ")
            .hasMessageContaining("table " + table + " does not exist")
            .hasMessageContaining("CREATE TABLE IF NOT EXISTS " + table);
      }
    }
  }

  @Test
  @DisplayName("a refused connection stays transient")
  void refusedIsTransient() {
    String url =
        "jdbc:postgresql://127.0.0.1:"
            + TestDatabases.closedPort()
            + "/postgres?user=postgres&password="
            + PostgresServer.PASSWORD;
    try (JdbcLockNode node =
        JdbcLockNode.builder(url).connectionTimeout(Duration.ofMillis(500)).build()) {
      // a timeout (the call waits for a connection) or the refusal: transient either way
      assertThat(failure(node)).isInstanceOf(RedlockTransientException.class);
      assertThatThrownBy(() -> node.tryAcquire("k", "t", TTL).await(WAIT))
          .isInstanceOf(RedlockTransientException.class)
          .isNotInstanceOf(NodeTimeoutException.class)
          .hasMessageContaining("cannot connect")
          .hasMessageNotContaining(PostgresServer.PASSWORD);
    }
  }

  @Test
  @DisplayName("a node built while its database is down connects once it is up")
  void connectsOnceTheDatabaseIsUp() {
    try (PostgresServer server = PostgresServer.startLocal()) {
      server.stop();
      try (JdbcLockNode node =
          JdbcLockNode.builder(server.jdbcUrl())
              .table(TestDatabases.uniqueTable("late"))
              .createTable(true)
              .connectionTimeout(Duration.ofMillis(500))
              .build()) {
        assertThatThrownBy(() -> node.tryAcquire("k", "t", TTL).await(WAIT))
            .isInstanceOf(RedlockTransientException.class)
            .isNotInstanceOf(NodeTimeoutException.class)
            .hasMessageContaining("cannot connect");
        server.restart();
        assertThat(acquireWithin(node, Duration.ofSeconds(30))).isTrue();
      }
    }
  }

  @Test
  @DisplayName(
      "a server back after seconds down is used again within a second of being ready, not after"
          + " HikariCP's backoff")
  void usedAgainSoonAfterARestart() throws Exception {
    try (PostgresServer server = PostgresServer.startLocal();
        JdbcLockNode node =
            JdbcLockNode.builder(server.jdbcUrl())
                .table(TestDatabases.uniqueTable("back"))
                .createTable(true)
                .build()) {
      assertThat(acquireWithin(node, Duration.ofSeconds(30))).isTrue();
      server.crash();
      // calls go on while it is down, long enough for HikariCP's own retries to back off to
      // seconds (10 ms doubling: its attempts 2.5 s, 5.1 s and 10.2 s after the first failure)
      long downUntil = System.nanoTime() + Duration.ofSeconds(6).toNanos();
      for (int i = 0; i < 200 && System.nanoTime() - downUntil < 0; i++) {
        assertThatThrownBy(() -> node.tryAcquire("down", "t", TTL).await(NODE_TIMEOUT))
            .isInstanceOf(RedlockTransientException.class);
        Thread.sleep(50);
      }
      server.restart();
      long ready = System.nanoTime();
      assertThat(acquireWithin(node, Duration.ofSeconds(30))).isTrue();
      assertThat(Duration.ofNanos(System.nanoTime() - ready))
          .as("from ready to the first acquisition")
          .isLessThan(Duration.ofSeconds(2));
    }
  }

  @Test
  @DisplayName("a password refused at first works once the server accepts it")
  void passwordAcceptedLater() {
    String admin = url("postgresql");
    String role = TestDatabases.uniqueTable("late_pw");
    String table = TestDatabases.uniqueTable("late_pw");
    try (JdbcLockNode creator =
        JdbcLockNode.builder(admin).table(table).createTable(true).build()) {
      assertThat(creator.tryAcquire("other", "t", TTL).await(WAIT).acquired()).isTrue();
    }
    TestDatabases.execute(
        admin,
        "CREATE ROLE " + role + " LOGIN PASSWORD 'first-pw'",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON " + table + " TO " + role);
    String url =
        admin
            .replace("user=" + PostgresServer.USER, "user=" + role)
            .replace(PostgresServer.PASSWORD, "second-pw");
    try (JdbcLockNode node = JdbcLockNode.builder(url).table(table).build()) {
      assertThat(failure(node))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("authentication failed");
      TestDatabases.execute(admin, "ALTER ROLE " + role + " PASSWORD 'second-pw'");
      // the pool retries in the background (backing off up to 5 s between attempts)
      assertThat(acquireWithin(node, Duration.ofSeconds(30))).isTrue();
    } finally {
      TestDatabases.execute(admin, "DROP TABLE " + table, "DROP ROLE " + role);
    }
  }

  @Test
  @DisplayName(
      "by default (strict nodes), build or the first acquisition on a quorum with a wrong"
          + " password on one node fails as misconfigured, naming that node")
  void strictNodes() {
    String good = url("postgresql");
    JdbcLockNode a =
        JdbcLockNode.builder(good)
            .name("good-a")
            .table(TestDatabases.uniqueTable("q"))
            .createTable(true)
            .build();
    JdbcLockNode b =
        JdbcLockNode.builder(good)
            .name("good-b")
            .table(TestDatabases.uniqueTable("q"))
            .createTable(true)
            .build();
    JdbcLockNode bad =
        JdbcLockNode.builder(good.replace(PostgresServer.PASSWORD, WRONG)).name("bad-pw").build();
    try {
      // build() names it when its status probe answers in time; the acquisition does otherwise
      assertThatThrownBy(
              () -> {
                try (Redlock redlock =
                    Redlock.builder()
                        .nodes(a, b, bad)
                        .allowSharedServers() // one test server
                        .nodeTimeout(NODE_TIMEOUT)
                        .build()) {
                  redlock.tryAcquire("strict", TTL);
                }
              })
          .isInstanceOf(NodesMisconfiguredException.class)
          .hasMessageContaining("bad-pw")
          .hasMessageContaining("authentication failed")
          .hasMessageNotContaining(WRONG);
    } finally {
      a.close();
      b.close();
      bad.close();
    }
  }

  /** Tries to take a fresh key until it works or {@code limit} has passed. */
  private static boolean acquireWithin(LockNode node, Duration limit) {
    long deadline = System.nanoTime() + limit.toNanos();
    RedlockException last = null;
    for (int attempt = 0; attempt < 1000 && System.nanoTime() - deadline < 0; attempt++) {
      try {
        AcquireResult result = node.tryAcquire("late-" + attempt, "t", TTL).await(WAIT);
        return result.acquired();
      } catch (RedlockException e) {
        last = e;
        try {
          Thread.sleep(100);
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw new AssertionError(interrupted);
        }
      }
    }
    throw new AssertionError("no acquisition within " + limit, last);
  }
}
