package io.redlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.jdbc.internal.JdbcLockNodeProvider;
import io.redlock.jdbc.internal.JdbcOptions;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import io.redlock.testservers.MariaDbServer;
import io.redlock.testservers.PostgresServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@DisplayName("JdbcLockNode")
class JdbcLockNodeTest {
  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final Duration TTL = Duration.ofSeconds(30);

  private static boolean acquire(LockNode node, String key, String token) {
    return node.tryAcquire(key, token, TTL).await(WAIT).acquired();
  }

  /** Statements of the node's on {@code table} that a server still runs, after 2 s at most. */
  private static int waitingInserts(Connection observer, String table) throws Exception {
    int count = -1;
    for (int i = 0; i < 20 && count != 0; i++) {
      if (i > 0) {
        Thread.sleep(100);
      }
      try (Statement s = observer.createStatement();
          java.sql.ResultSet rs =
              s.executeQuery(
                  "SELECT count(*) FROM pg_stat_activity WHERE state = 'active'"
                      + " AND query LIKE 'INSERT INTO "
                      + table
                      + " %'")) {
        rs.next();
        count = rs.getInt(1);
      }
    }
    return count;
  }

  private static RedlockException failure(LockNode node) {
    try {
      AcquireResult result = node.tryAcquire("k", "t", TTL).await(WAIT);
      throw new AssertionError("expected a failure, got " + result);
    } catch (RedlockException e) {
      return e;
    }
  }

  @Nested
  @DisplayName("schema")
  class Schema {

    @Test
    @DisplayName("a missing table with creation not allowed fails with the DDL to run")
    void missingTablePrintsDdl() {
      String table = TestDatabases.uniqueTable("absent");
      try (JdbcLockNode node =
          JdbcLockNode.builder(TestDatabases.postgres().jdbcUrl()).table(table).build()) {
        RedlockException e = failure(node);
        assertThat(e).isInstanceOf(RedlockNonTransientException.class);
        assertThat(e.getMessage())
            .contains("table " + table + " does not exist")
            .contains("CREATE TABLE IF NOT EXISTS " + table)
            .contains("key_hash   BYTEA")
            .contains("expires_at TIMESTAMPTZ")
            .contains("redlock.createTable=true")
            .doesNotContain(PostgresServer.PASSWORD);
        assertThat(node.createTableSql()).contains("CREATE TABLE IF NOT EXISTS " + table);
      }
    }

    @Test
    @DisplayName("the DDL in the message is the one the node would run (SQLite)")
    void ddlIsTheDialectsOwn() {
      String url = TestDatabases.sqliteUrl("ddl");
      try (JdbcLockNode node = JdbcLockNode.builder(url).build()) {
        assertThat(failure(node).getMessage()).contains("expires_at INTEGER").contains("BLOB");
      }
      // running the printed DDL by hand makes the node work
      try (JdbcLockNode probe = JdbcLockNode.builder(url).build()) {
        String ddl = probe.createTableSql();
        TestDatabases.execute(url, ddl.split(";\n"));
        assertThat(acquire(probe, "k", "t")).isTrue();
      }
    }

    @Test
    @DisplayName(
        "many clients starting at once on PostgreSQL create the table exactly once, no error")
    void concurrentCreationOnPostgres() throws Exception {
      concurrentCreation(TestDatabases.postgres().jdbcUrl());
    }

    @Test
    @DisplayName("many clients starting at once on MariaDB create the table exactly once, no error")
    void concurrentCreationOnMariaDb() throws Exception {
      concurrentCreation(TestDatabases.mariadb().jdbcUrl());
    }

    private void concurrentCreation(String url) throws Exception {
      String table = TestDatabases.uniqueTable("race");
      int clients = 8;
      List<JdbcLockNode> nodes = new ArrayList<>();
      ExecutorService pool = Executors.newFixedThreadPool(clients);
      try {
        for (int i = 0; i < clients; i++) {
          nodes.add(JdbcLockNode.builder(url).table(table).createTable(true).poolSize(1).build());
        }
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Boolean>> results = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
          JdbcLockNode node = nodes.get(i);
          String key = "key-" + i;
          results.add(
              pool.submit(
                  () -> {
                    start.await();
                    return acquire(node, key, "token");
                  }));
        }
        start.countDown();
        for (Future<Boolean> r : results) {
          assertThat(r.get(60, TimeUnit.SECONDS)).isTrue();
        }
        // and they all see one table: a key held by one is held for all
        assertThat(acquire(nodes.get(1), "key-0", "other")).isFalse();
      } finally {
        pool.shutdownNow();
        nodes.forEach(JdbcLockNode::close);
      }
    }

    @Test
    @DisplayName("a table with other columns is reported with the expected DDL")
    void wrongColumns() {
      String url = TestDatabases.h2Url("columns");
      TestDatabases.execute(url, "CREATE TABLE redlock_locks (id INT PRIMARY KEY)");
      try (JdbcLockNode node = JdbcLockNode.builder(url).createTable(true).build()) {
        RedlockException e = failure(node);
        assertThat(e).isInstanceOf(RedlockNonTransientException.class);
        assertThat(e.getMessage())
            .contains("does not have the expected columns")
            .contains("CREATE TABLE IF NOT EXISTS redlock_locks");
      }
    }

    @Test
    @DisplayName("a schema-qualified table is used in that schema")
    void schemaQualifiedTable() {
      String url = TestDatabases.postgres().jdbcUrl();
      String schema = TestDatabases.uniqueTable("s");
      TestDatabases.execute(url, "CREATE SCHEMA " + schema);
      try (JdbcLockNode node =
          JdbcLockNode.builder(url).table(schema + ".locks").createTable(true).build()) {
        assertThat(acquire(node, "k", "t")).isTrue();
      }
      TestDatabases.execute(url, "SELECT token FROM " + schema + ".locks");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(
        strings = {"plain:key", "pair \uD83D\uDD12 ok", "nul \u0000 here", "lone \uD800 x"})
    @DisplayName("lock_key shows the key as text, NUL and lone surrogates as U+FFFD")
    void readableKeyColumn(String key) throws Exception {
      String url = TestDatabases.postgres().jdbcUrl();
      String table = TestDatabases.uniqueTable("text");
      String expected = key.replace('\u0000', '\uFFFD').replace('\uD800', '\uFFFD');
      try (JdbcLockNode node = JdbcLockNode.builder(url).table(table).createTable(true).build();
          Connection c = DriverManager.getConnection(url);
          Statement s = c.createStatement()) {
        assertThat(acquire(node, key, "t")).isTrue();
        assertThat(acquire(node, key, "other")).as("the same key is held").isFalse();
        try (java.sql.ResultSet rs = s.executeQuery("SELECT lock_key FROM " + table)) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getString(1)).isEqualTo(expected);
        }
        assertThat(node.release(key, "t").await(WAIT)).isTrue();
      }
    }
  }

  @Nested
  @DisplayName("table names")
  class TableNames {

    @ParameterizedTest
    @ValueSource(
        strings = {
          "",
          "1locks",
          "locks; DROP TABLE users",
          "locks--",
          "lo cks",
          "\"locks\"",
          "a.b.c",
          ".locks",
          "locks.",
          "l\u00f6cks",
          "a234567890123456789012345678901234567890123456789012345678901234"
        })
    @DisplayName("names that are not plain identifiers are rejected with the rule")
    void rejected(String name) {
      assertThatThrownBy(() -> JdbcLockNode.builder(TestDatabases.h2Url("names")).table(name))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid table name")
          .hasMessageContaining("letters, digits and underscores");
    }

    @Test
    @DisplayName("a bad table name in the URL is rejected too")
    void rejectedInUrl() {
      assertThatThrownBy(
              () -> JdbcLockNode.builder("jdbc:h2:mem:x?redlock.table=x%3BDROP%20TABLE%20y"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid table name 'x;DROP TABLE y'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"locks", "_locks_2", "app.redlock_locks", "LOCKS"})
    @DisplayName("plain and schema-qualified identifiers are accepted")
    void accepted(String name) {
      String url = TestDatabases.h2Url("names");
      if (name.contains(".")) {
        TestDatabases.execute(url, "CREATE SCHEMA " + name.substring(0, name.indexOf('.')));
      }
      try (JdbcLockNode node = JdbcLockNode.builder(url).table(name).createTable(true).build()) {
        assertThat(acquire(node, "k", "t")).isTrue();
      }
    }
  }

  @Nested
  @DisplayName("errors")
  class Errors {

    @Test
    @DisplayName("a wrong password on PostgreSQL is non-transient and the password is not shown")
    void wrongPasswordPostgres() {
      String url =
          TestDatabases.postgres().jdbcUrl().replace(PostgresServer.PASSWORD, "wrong-secret-pw");
      try (JdbcLockNode node = JdbcLockNode.builder(url).build()) {
        RedlockException e = failure(node);
        assertThat(e).isInstanceOf(RedlockNonTransientException.class);
        assertThat(e.getMessage())
            .contains("authentication failed")
            .contains("check the user and password")
            .doesNotContain("wrong-secret-pw");
        assertThat(e.node()).hasValueSatisfying(n -> assertThat(n).doesNotContain("wrong-secret"));
        assertThat(node.name()).doesNotContain("wrong-secret-pw").contains("127.0.0.1");
      }
    }

    @Test
    @DisplayName("a wrong password on MariaDB is non-transient and the password is not shown")
    void wrongPasswordMariaDb() {
      String url =
          TestDatabases.mariadb().jdbcUrl().replace(MariaDbServer.PASSWORD, "wrong-secret-pw");
      try (JdbcLockNode node = JdbcLockNode.builder(url).build()) {
        RedlockException e = failure(node);
        assertThat(e).isInstanceOf(RedlockNonTransientException.class);
        assertThat(e.getMessage()).contains("authentication failed").doesNotContain("wrong-secret");
      }
    }

    @Test
    @DisplayName("a read-only database is non-transient and says to use the primary")
    void readOnly() {
      String admin = TestDatabases.postgres().jdbcUrl();
      String db = TestDatabases.uniqueTable("ro");
      TestDatabases.execute(admin, "CREATE DATABASE " + db);
      String url = admin.replace("/postgres?", "/" + db + "?");
      try (JdbcLockNode creator = JdbcLockNode.builder(url).createTable(true).build()) {
        assertThat(acquire(creator, "k", "t")).isTrue();
      }
      TestDatabases.execute(
          admin, "ALTER DATABASE " + db + " SET default_transaction_read_only = on");
      try (JdbcLockNode node = JdbcLockNode.builder(url).build()) {
        RedlockException e = failure(node);
        assertThat(e).isInstanceOf(RedlockNonTransientException.class);
        assertThat(e.getMessage()).contains("read-only").contains("primary");
      }
    }

    @Test
    @DisplayName(
        "a statement stuck behind a row lock is cancelled on the server at the query timeout")
    void statementTimeout() throws Exception {
      String url = TestDatabases.postgres().jdbcUrl();
      String table = TestDatabases.uniqueTable("slow");
      try (JdbcLockNode node =
              JdbcLockNode.builder(url)
                  .table(table)
                  .createTable(true)
                  .queryTimeout(Duration.ofSeconds(1))
                  .build();
          Connection blocker = DriverManager.getConnection(url);
          Connection observer = DriverManager.getConnection(url)) {
        assertThat(acquire(node, "k", "t")).isTrue();
        blocker.setAutoCommit(false);
        try (Statement s = blocker.createStatement()) {
          s.executeQuery("SELECT * FROM " + table + " FOR UPDATE").close();
        }
        long start = System.nanoTime();
        Reply<AcquireResult> reply = node.tryAcquire("k", "t", TTL);
        assertThatThrownBy(() -> reply.await(WAIT))
            .isInstanceOf(RedlockTransientException.class)
            .hasMessageContaining("timed out")
            .hasMessageContaining("redlock.queryTimeout");
        // well before the socket timeout (query timeout + 5 s), which would leave the statement
        // waiting on the server
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
        assertThat(waitingInserts(observer, table)).isZero();
        blocker.rollback();
      }
    }

    @Test
    @DisplayName("a URL whose driver is missing says which dependency to add")
    void missingDriver() {
      assertThatThrownBy(() -> JdbcLockNode.builder("jdbc:derby:memory:x").build())
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("no JDBC driver")
          .hasMessageContaining("jdbc:derby");
    }

    @Test
    @DisplayName("a MariaDB DataSource that reports found rows is refused with the fix")
    void mariaDbNeedsAffectedRows() throws Exception {
      String url = TestDatabases.mariadb().jdbcUrl();
      String table = TestDatabases.uniqueTable("found");
      org.mariadb.jdbc.MariaDbDataSource plain = new org.mariadb.jdbc.MariaDbDataSource(url);
      try (JdbcLockNode node =
          JdbcLockNode.builder(plain)
              .name("plain-mariadb")
              .table(table)
              .createTable(true)
              .build()) {
        RedlockException e = failure(node);
        assertThat(e).isInstanceOf(RedlockNonTransientException.class);
        assertThat(e.getMessage()).startsWith("plain-mariadb: ").contains("useAffectedRows=true");
      }
      org.mariadb.jdbc.MariaDbDataSource affected =
          new org.mariadb.jdbc.MariaDbDataSource(url + "&useAffectedRows=true");
      try (JdbcLockNode node =
          JdbcLockNode.builder(affected).table(table).createTable(true).build()) {
        assertThat(acquire(node, "k", "a")).isTrue();
        assertThat(acquire(node, "k", "b")).isFalse();
      }
    }
  }

  @Nested
  @DisplayName("URLs and the provider")
  class Urls {

    @Test
    @DisplayName("the provider is found by ServiceLoader for every JDBC scheme")
    void providerIsRegistered() {
      List<LockNodeProvider> providers = new ArrayList<>();
      ServiceLoader.load(LockNodeProvider.class).forEach(providers::add);
      assertThat(providers)
          .filteredOn(p -> p instanceof JdbcLockNodeProvider)
          .singleElement()
          .satisfies(
              p ->
                  assertThat(p.schemes())
                      .containsExactlyInAnyOrder(
                          "jdbc:postgresql",
                          "jdbc:mariadb",
                          "jdbc:mysql",
                          "jdbc:sqlite",
                          "jdbc:h2"));
    }

    @Test
    @DisplayName("redlock.* options configure the node and never reach the driver")
    void optionsAreApplied() {
      String table = TestDatabases.uniqueTable("opt");
      String url =
          TestDatabases.withOption(
              TestDatabases.withOption(
                  TestDatabases.withOption(
                      TestDatabases.postgres().jdbcUrl(), "redlock.table", table),
                  "redlock.createTable",
                  "true"),
              "redlock.poolSize",
              "2");
      try (LockNode node = new JdbcLockNodeProvider().open(NodeUri.parse(url))) {
        assertThat(node.name()).doesNotContain("redlock.").doesNotContain(PostgresServer.PASSWORD);
        assertThat(acquire(node, "k", "t")).isTrue();
      }
      TestDatabases.execute(TestDatabases.postgres().jdbcUrl(), "SELECT token FROM " + table);
    }

    @Test
    @DisplayName("an unknown redlock.* option is rejected with the list of known ones")
    void unknownOption() {
      assertThatThrownBy(() -> JdbcLockNode.builder("jdbc:h2:mem:x?redlock.tabel=locks"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("redlock.tabel")
          .hasMessageContaining("redlock.table")
          .hasMessageContaining("redlock.queryTimeout");
    }

    @Test
    @DisplayName("bad option values are rejected naming the option")
    void badValues() {
      assertThatThrownBy(() -> JdbcLockNode.builder("jdbc:h2:mem:x?redlock.poolSize=0"))
          .hasMessageContaining("redlock.poolSize must be a whole number from 1 to 256");
      assertThatThrownBy(() -> JdbcLockNode.builder("jdbc:h2:mem:x?redlock.createTable=maybe"))
          .hasMessageContaining("redlock.createTable must be true or false");
      assertThatThrownBy(() -> JdbcLockNode.builder("jdbc:h2:mem:x?redlock.queryTimeout=soon"))
          .hasMessageContaining("redlock.queryTimeout must be a duration");
      assertThatThrownBy(() -> JdbcLockNode.builder("jdbc:h2:mem:x?redlock.queryTimeout=200ms"))
          .hasMessageContaining("at least 1 s");
      assertThatThrownBy(() -> JdbcLockNode.builder("postgresql://host/db"))
          .hasMessageContaining("must start with jdbc:");
    }

    @Test
    @DisplayName("names drop secret parameters and redact passwords in the authority")
    void namesHideSecrets() {
      assertThat(
              JdbcOptions.parse(
                      "jdbc:postgresql://h:5432/db?user=u&password=p1&ssl=true&redlock.poolSize=2")
                  .displayName())
          .isEqualTo("jdbc:postgresql://h:5432/db?user=u&ssl=true");
      assertThat(JdbcOptions.parse("jdbc:h2:tcp://h/db;USER=sa;PASSWORD=p2").displayName())
          .isEqualTo("jdbc:h2:tcp://h/db;USER=sa");
      assertThat(JdbcOptions.parse("jdbc:mysql://u:p3@h/db").displayName()).doesNotContain("p3");
    }

    @Test
    @DisplayName("a user's DataSource in manual-commit mode still gets one transaction per call")
    void manualCommitDataSource() {
      org.h2.jdbcx.JdbcDataSource ds = new org.h2.jdbcx.JdbcDataSource();
      ds.setURL(TestDatabases.h2Url("manual"));
      javax.sql.DataSource manual =
          new javax.sql.DataSource() {
            @Override
            public Connection getConnection() throws java.sql.SQLException {
              Connection c = ds.getConnection();
              c.setAutoCommit(false);
              return c;
            }

            @Override
            public Connection getConnection(String u, String p) throws java.sql.SQLException {
              return getConnection();
            }

            @Override
            public java.io.PrintWriter getLogWriter() {
              return null;
            }

            @Override
            public void setLogWriter(java.io.PrintWriter out) {}

            @Override
            public void setLoginTimeout(int seconds) {}

            @Override
            public int getLoginTimeout() {
              return 0;
            }

            @Override
            public java.util.logging.Logger getParentLogger() {
              return java.util.logging.Logger.getGlobal();
            }

            @Override
            public <T> T unwrap(Class<T> iface) {
              throw new UnsupportedOperationException();
            }

            @Override
            public boolean isWrapperFor(Class<?> iface) {
              return false;
            }
          };
      try (JdbcLockNode a = JdbcLockNode.builder(manual).createTable(true).build();
          JdbcLockNode b = JdbcLockNode.builder(manual).build()) {
        assertThat(acquire(a, "k", "t1")).isTrue();
        assertThat(acquire(b, "k", "t2")).isFalse(); // committed, so visible to another client
        assertThat(b.release("k", "t1").await(WAIT)).isTrue();
      }
    }
  }
}
