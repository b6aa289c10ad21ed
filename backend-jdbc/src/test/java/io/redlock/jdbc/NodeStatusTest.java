package io.redlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.spi.NodeStatus;
import io.redlock.testservers.MariaDbServer;
import io.redlock.testservers.PostgresServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("status(): incarnation, uptime and durability per database")
class NodeStatusTest {
  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final Duration TTL = Duration.ofSeconds(30);

  private static NodeStatus status(JdbcLockNode node) {
    return node.status().await(WAIT);
  }

  /** Asks until the node answers: the first calls after a restart meet broken connections. */
  private static NodeStatus statusAfterRestart(JdbcLockNode node) throws InterruptedException {
    RedlockException last = null;
    for (int i = 0; i < 50; i++) {
      try {
        return status(node);
      } catch (RedlockException e) {
        last = e;
        Thread.sleep(200);
      }
    }
    throw new AssertionError("no status from " + node.name() + " after the restart", last);
  }

  @Nested
  @DisplayName("PostgreSQL")
  class Postgres {

    @Test
    @DisplayName("the test server (fsync=off, synchronous_commit=off) reports itself not durable")
    void sharedServer() throws Exception {
      String url = TestDatabases.postgres().jdbcUrl();
      try (JdbcLockNode node = JdbcLockNode.builder(url).createTable(true).build()) {
        NodeStatus s = status(node);
        assertThat(s.incarnation()).startsWith("postgresql-started-");
        assertThat(s.uptime()).isPositive().isLessThan(Duration.ofDays(365));
        assertThat(s.details())
            .containsKeys("version", "started", "fsync", "synchronous_commit", "full_page_writes")
            .containsEntry("table", "logged");
        try (Connection c = DriverManager.getConnection(url);
            Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SHOW fsync")) {
          rs.next();
          String fsync = rs.getString(1);
          assertThat(s.details()).containsEntry("fsync", fsync);
          if (fsync.equals("off")) {
            assertThat(s.durable()).isFalse();
            assertThat(s.details().get("durability")).contains("fsync=off");
          }
        }
        Instant started = Instant.parse(s.details().get("started"));
        assertThat(Duration.between(started, Instant.now()).minus(s.uptime()).abs())
            .as("start time + uptime is now (the test machine's clock is the server's)")
            .isLessThan(Duration.ofSeconds(5));
      }
    }

    @Test
    @DisplayName("an unlogged table is not durable whatever the server's settings")
    void unloggedTable() {
      String url = TestDatabases.postgres().jdbcUrl();
      String table = TestDatabases.uniqueTable("unlogged");
      TestDatabases.execute(
          url,
          "CREATE UNLOGGED TABLE "
              + table
              + " (key_hash BYTEA NOT NULL PRIMARY KEY, lock_key TEXT NOT NULL,"
              + " token BYTEA NOT NULL, expires_at TIMESTAMPTZ NOT NULL,"
              + " fence BIGINT NOT NULL DEFAULT 0)");
      try (JdbcLockNode node = JdbcLockNode.builder(url).table(table).build()) {
        NodeStatus s = status(node);
        assertThat(s.durable()).isFalse();
        assertThat(s.details()).containsEntry("table", "unlogged");
        assertThat(s.details().get("durability")).contains("table " + table + " is unlogged");
      }
    }

    @Test
    @DisplayName(
        "a clean restart and a crash each change the incarnation; the counters are still there")
    void restartChangesIncarnation() throws Exception {
      try (PostgresServer server = PostgresServer.startLocal();
          JdbcLockNode node = JdbcLockNode.builder(server.jdbcUrl()).createTable(true).build()) {
        NodeStatus first = status(node);
        long f1 = node.tryAcquireFenced("k", "t1", TTL).await(WAIT).fence();
        assertThat(node.release("k", "t1").await(WAIT)).isTrue();
        // a checkpoint writes the counter to the data files: the crash below cannot lose it
        TestDatabases.execute(server.jdbcUrl(), "CHECKPOINT");

        server.stop();
        server.restart();
        NodeStatus second = statusAfterRestart(node);
        assertThat(second.incarnation()).isNotEqualTo(first.incarnation());
        assertThat(second.uptime()).isLessThan(Duration.ofSeconds(30));

        server.crash();
        server.restart();
        NodeStatus third = statusAfterRestart(node);
        assertThat(third.incarnation())
            .isNotEqualTo(second.incarnation())
            .isNotEqualTo(first.incarnation());

        try (Connection c = DriverManager.getConnection(server.jdbcUrl());
            Statement st = c.createStatement();
            ResultSet rs =
                st.executeQuery("SELECT fence FROM redlock_locks WHERE lock_key = 'k'")) {
          assertThat(rs.next()).as("the released key's row, after two restarts").isTrue();
          assertThat(rs.getLong(1)).isEqualTo(f1);
        }
        long f2 = node.tryAcquireFenced("k", "t2", TTL).await(WAIT).fence();
        assertThat(f2).isGreaterThan(f1);
      }
    }
  }

  @Nested
  @DisplayName("MariaDB")
  class MariaDb {

    @Test
    @DisplayName("durable only with InnoDB and innodb_flush_log_at_trx_commit=1")
    void durability() throws Exception {
      MariaDbServer server = TestDatabases.mariadb();
      String url = server.jdbcUrl();
      String myisam = TestDatabases.uniqueTable("myisam");
      TestDatabases.execute(
          url,
          "CREATE TABLE "
              + myisam
              + " (key_hash BINARY(32) NOT NULL PRIMARY KEY, lock_key TEXT NOT NULL,"
              + " token BLOB NOT NULL, expires_at DATETIME(6) NOT NULL,"
              + " fence BIGINT NOT NULL DEFAULT 0) ENGINE=MyISAM");
      try (JdbcLockNode innodb = JdbcLockNode.builder(url).createTable(true).build();
          JdbcLockNode other = JdbcLockNode.builder(url).table(myisam).build()) {
        NodeStatus s = status(innodb);
        assertThat(s.incarnation()).matches("mariadb-started-\\d+-.+:\\d+");
        assertThat(s.details())
            .containsEntry("engine", "InnoDB")
            .containsKeys("version", "started", "innodb_flush_log_at_trx_commit", "log_bin");
        long started =
            Long.parseLong(s.incarnation().split("-")[2]); // mariadb-started-<s>-<host>:<port>
        assertThat(Instant.ofEpochSecond(started).plus(s.uptime()))
            .as("start + uptime is now")
            .isBetween(Instant.now().minusSeconds(5), Instant.now().plusSeconds(5));
        String flush = s.details().get("innodb_flush_log_at_trx_commit");
        assertThat(s.durable()).isEqualTo(flush.equals("1") || flush.equals("3"));
        assertThat(status(other).durable()).isFalse();
        assertThat(status(other).details().get("durability")).contains("uses engine MyISAM");

        assumeThat(server.isLocal()).as("a server of our own, to change its settings").isTrue();
        String admin = server.adminJdbcUrl();
        try {
          TestDatabases.execute(admin, "SET GLOBAL innodb_flush_log_at_trx_commit = 1");
          NodeStatus synced = status(innodb);
          assertThat(synced.durable()).isTrue();
          assertThat(synced.details()).containsEntry("durability", "durable");
          assertThat(synced.incarnation()).isEqualTo(s.incarnation());
          assertThat(status(other).durable()).as("MyISAM, whatever the log does").isFalse();
        } finally {
          TestDatabases.execute(admin, "SET GLOBAL innodb_flush_log_at_trx_commit = " + flush);
        }
        assertThat(status(innodb).durable()).isEqualTo(s.durable());
      }
    }
  }

  @Nested
  @DisplayName("SQLite")
  class Sqlite {

    @Test
    @DisplayName("a WAL file with synchronous=FULL is durable, with NORMAL it is not")
    void durability() {
      String url = TestDatabases.sqliteUrl("status");
      try (JdbcLockNode full = JdbcLockNode.builder(url).createTable(true).build()) {
        NodeStatus s = status(full);
        assertThat(s.durable()).isTrue();
        assertThat(s.details())
            .containsEntry("journal_mode", "wal")
            .containsEntry("synchronous", "2")
            .containsEntry("file", url.substring("jdbc:sqlite:".length()));
      }
      try (JdbcLockNode normal =
          JdbcLockNode.builder(url + "?synchronous=NORMAL").createTable(true).build()) {
        NodeStatus s = status(normal);
        assertThat(s.durable()).isFalse();
        assertThat(s.details().get("durability")).contains("synchronous=NORMAL");
      }
    }

    @Test
    @DisplayName("the incarnation belongs to the file: kept across clients, new for a new file")
    void incarnationIsTheFiles() throws Exception {
      String url = TestDatabases.sqliteUrl("identity");
      String first;
      try (JdbcLockNode node = JdbcLockNode.builder(url).createTable(true).build()) {
        first = status(node).incarnation();
      }
      try (JdbcLockNode again = JdbcLockNode.builder(url).build();
          JdbcLockNode elsewhere =
              JdbcLockNode.builder(TestDatabases.sqliteUrl("identity")).createTable(true).build()) {
        NodeStatus s = status(again);
        assertThat(s.incarnation()).isEqualTo(first);
        assertThat(status(elsewhere).incarnation()).isNotEqualTo(first);
        Path bootId = Path.of("/proc/sys/kernel/random/boot_id");
        if (Files.isReadable(bootId)) {
          String boot = Files.readString(bootId).strip();
          assertThat(s.incarnation()).endsWith("-boot-" + boot);
          assertThat(s.details()).containsEntry("boot_id", boot);
        }
      }
    }

    @Test
    @DisplayName("without permission to create tables, status() names the table to create")
    void incarnationTableMissing() {
      String url = TestDatabases.sqliteUrl("nocreate");
      TestDatabases.execute(
          url,
          "CREATE TABLE redlock_locks (key_hash BLOB NOT NULL PRIMARY KEY, lock_key TEXT NOT NULL,"
              + " token BLOB NOT NULL, expires_at INTEGER NOT NULL,"
              + " fence INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID");
      try (JdbcLockNode node = JdbcLockNode.builder(url).build()) {
        assertThat(node.tryAcquire("k", "t", TTL).await(WAIT).acquired()).isTrue();
        RedlockException e = null;
        try {
          status(node);
        } catch (RedlockException thrown) {
          e = thrown;
        }
        assertThat(e)
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("redlock_locks_incarnation")
            .hasMessageContaining("CREATE TABLE IF NOT EXISTS redlock_locks_incarnation");
        assertThat(node.createTableSql()).contains("redlock_locks_incarnation");
      }
    }
  }

  @Nested
  @DisplayName("H2")
  class H2 {

    @Test
    @DisplayName("in memory: not durable, and a new incarnation once the database is gone")
    void inMemory() {
      String url = TestDatabases.h2Url("status");
      String first;
      try (JdbcLockNode node = JdbcLockNode.builder(url).createTable(true).build()) {
        NodeStatus s = status(node);
        first = s.incarnation();
        assertThat(s.durable()).isFalse();
        assertThat(s.incarnation()).startsWith("h2-");
        assertThat(s.details()).containsEntry("database", "(memory)");
        assertThat(s.details().get("durability")).contains("in-memory");
        assertThat(status(node).incarnation()).isEqualTo(s.incarnation());
      }
      TestDatabases.execute(url, "SHUTDOWN");
      try (JdbcLockNode node = JdbcLockNode.builder(url).createTable(true).build()) {
        assertThat(status(node).incarnation()).startsWith("h2-").isNotEqualTo(first);
      }
    }

    @Test
    @DisplayName(
        "a file: durable only with WRITE_DELAY 0; reopening it is a new incarnation, same counters")
    void file() throws Exception {
      Path dir = Path.of("target", "h2").toAbsolutePath();
      Files.createDirectories(dir);
      String base = "jdbc:h2:" + dir.resolve("status-" + UUID.randomUUID());
      String first;
      long fence;
      try (JdbcLockNode node = JdbcLockNode.builder(base).createTable(true).build()) {
        NodeStatus s = status(node);
        assertThat(s.durable()).isFalse();
        assertThat(s.details().get("durability")).contains("WRITE_DELAY=");
        first = s.incarnation();
        fence = node.tryAcquireFenced("k", "t", TTL).await(WAIT).fence();
        assertThat(node.release("k", "t").await(WAIT)).isTrue();
      }
      // closing the last connection closed the database; this opens it anew
      try (JdbcLockNode node =
          JdbcLockNode.builder(base + ";WRITE_DELAY=0").createTable(true).build()) {
        NodeStatus s = status(node);
        assertThat(s.durable()).isTrue();
        assertThat(s.details()).containsEntry("write_delay", "0");
        assertThat(s.incarnation()).isNotEqualTo(first);
        long next = node.tryAcquireFenced("k", "t2", TTL).await(WAIT).fence();
        assertThat(next).isGreaterThan(fence);
      }
    }
  }
}
