package io.redlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.RedlockNonTransientException;
import io.redlock.spi.AcquireResult;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Fencing counters on every dialect, checked in the table itself: where the counter lives, what
 * release leaves behind, how racing nodes share it, and how tables of earlier versions are handled.
 * The kit's R12 rules check the same contract from the outside.
 */
@DisplayName("Fencing counters in the table")
class FencingTest {
  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final Duration TTL = Duration.ofSeconds(30);

  /** The databases, each with the DDL that versions before fencing created. */
  enum Db {
    POSTGRESQL(
        "CREATE TABLE %s (key_hash BYTEA NOT NULL PRIMARY KEY, lock_key TEXT NOT NULL,"
            + " token BYTEA NOT NULL, expires_at TIMESTAMPTZ NOT NULL)",
        "BIGINT") {
      @Override
      String url() {
        return TestDatabases.postgres().jdbcUrl();
      }
    },
    MARIADB(
        "CREATE TABLE %s (key_hash BINARY(32) NOT NULL PRIMARY KEY, lock_key TEXT CHARACTER SET"
            + " utf8mb4 NOT NULL, token BLOB NOT NULL, expires_at DATETIME(6) NOT NULL)"
            + " ENGINE=InnoDB",
        "BIGINT") {
      @Override
      String url() {
        return TestDatabases.mariadb().jdbcUrl();
      }
    },
    SQLITE(
        "CREATE TABLE %s (key_hash BLOB NOT NULL PRIMARY KEY, lock_key TEXT NOT NULL,"
            + " token BLOB NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID",
        "INTEGER") {
      @Override
      String url() {
        return TestDatabases.sqliteUrl("fencing");
      }
    },
    H2(
        "CREATE TABLE %s (key_hash BINARY(32) NOT NULL PRIMARY KEY, lock_key CHARACTER VARYING"
            + " NOT NULL, token BINARY VARYING NOT NULL, expires_at TIMESTAMP(9) WITH TIME ZONE"
            + " NOT NULL)",
        "BIGINT") {
      @Override
      String url() {
        return TestDatabases.h2Url("fencing");
      }
    };

    final String legacyDdl;
    final String counterType;

    Db(String legacyDdl, String counterType) {
      this.legacyDdl = legacyDdl;
      this.counterType = counterType;
    }

    /** A URL for one test: the shared server, or a fresh SQLite file or H2 database. */
    abstract String url();

    /** A URL for raw connections beside the nodes (SQLite: wait for the nodes' writes). */
    String rawUrl(String url) {
      return this == SQLITE ? TestDatabases.withOption(url, "busy_timeout", "5000") : url;
    }
  }

  /** A row as stored, whatever its expiry: its token and its counter. */
  private record Row(byte[] token, long fence) {}

  private static Optional<Row> row(Db db, String url, String table, String key) {
    try (Connection c = DriverManager.getConnection(db.rawUrl(url));
        PreparedStatement ps =
            c.prepareStatement("SELECT token, fence FROM " + table + " WHERE key_hash = ?")) {
      ps.setBytes(
          1, io.redlock.sql.internal.KeyCodec.hash(io.redlock.sql.internal.KeyCodec.encode(key)));
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(new Row(rs.getBytes(1), rs.getLong(2))) : Optional.empty();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("raw read of " + table + " failed", e);
    }
  }

  private static JdbcLockNode node(String url, String table) {
    return JdbcLockNode.builder(url).table(table).createTable(true).build();
  }

  private static long fenced(JdbcLockNode node, String key, String token, Duration ttl) {
    AcquireResult result = node.tryAcquireFenced(key, token, ttl).await(WAIT);
    assertThat(result.acquired()).as("fenced acquire of %s by %s", key, token).isTrue();
    return result.fence();
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  @DisplayName("the counter is stored with the key, and release keeps it in an expired row")
  void counterIsStoredAndKept(Db db) {
    String url = db.url();
    String table = TestDatabases.uniqueTable("fence");
    try (JdbcLockNode node = node(url, table)) {
      long f1 = fenced(node, "k", "t1", TTL);
      assertThat(row(db, url, table, "k")).get().extracting(Row::fence).isEqualTo(f1);
      assertThat(node.release("k", "t1").await(WAIT)).isTrue();

      Row kept = row(db, url, table, "k").orElseThrow();
      assertThat(kept.fence()).as("counter after release").isEqualTo(f1);
      assertThat(kept.token()).as("token of a released row").isEmpty();
      assertThat(node.release("k", "t1").await(WAIT)).as("a second release").isFalse();
      assertThat(node.extend("k", "t1", TTL).await(WAIT)).as("extend after release").isFalse();

      // the released key is free, for plain and fenced acquisitions alike
      assertThat(node.tryAcquire("k", "t2", TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.release("k", "t2").await(WAIT)).isTrue();
      assertThat(row(db, url, table, "k")).get().extracting(Row::fence).isEqualTo(f1);
      long f2 = fenced(node, "k", "t3", TTL);
      assertThat(f2).isGreaterThan(f1);
    }
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  @DisplayName("a key never acquired with fencing leaves no row behind after release")
  void plainKeysAreDeleted(Db db) {
    String url = db.url();
    String table = TestDatabases.uniqueTable("plain");
    try (JdbcLockNode node = node(url, table)) {
      assertThat(node.tryAcquire("k", "t", TTL).await(WAIT).acquired()).isTrue();
      assertThat(row(db, url, table, "k")).get().extracting(Row::fence).isEqualTo(0L);
      assertThat(node.release("k", "t").await(WAIT)).isTrue();
      assertThat(row(db, url, table, "k")).isEmpty();
    }
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  @DisplayName("raiseFence on a plainly acquired key gives it a counter that release then keeps")
  void raiseOnPlainKey(Db db) {
    String url = db.url();
    String table = TestDatabases.uniqueTable("raise");
    try (JdbcLockNode node = node(url, table)) {
      assertThat(node.tryAcquire("k", "t", TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.raiseFence("k", "t", 42).await(WAIT)).isTrue();
      assertThat(node.raiseFence("k", "t", 42).await(WAIT))
          .as("raising to the same value")
          .isTrue();
      assertThat(node.raiseFence("k", "t", 7).await(WAIT)).as("raising to less").isTrue();
      assertThat(row(db, url, table, "k")).get().extracting(Row::fence).isEqualTo(42L);
      assertThat(node.raiseFence("k", "other", 99).await(WAIT)).as("another token").isFalse();
      assertThat(node.release("k", "t").await(WAIT)).isTrue();
      assertThat(row(db, url, table, "k")).get().extracting(Row::fence).isEqualTo(42L);
      assertThat(node.raiseFence("k", "t", 99).await(WAIT)).as("after release").isFalse();
    }
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  @DisplayName("the counter survives expiry, and an expired holder can neither raise nor release")
  void survivesExpiry(Db db) throws InterruptedException {
    String url = db.url();
    String table = TestDatabases.uniqueTable("expiry");
    try (JdbcLockNode node = node(url, table)) {
      long f1 = fenced(node, "k", "t1", Duration.ofMillis(50));
      Thread.sleep(300);
      long far = f1 + 1_000_000_000_000L; // beyond the clock floor of any later acquisition
      assertThat(node.raiseFence("k", "t1", far).await(WAIT)).isFalse();
      assertThat(node.release("k", "t1").await(WAIT)).isFalse();
      assertThat(row(db, url, table, "k")).get().extracting(Row::fence).isEqualTo(f1);
      long f2 = fenced(node, "k", "t2", TTL);
      assertThat(f2).isGreaterThan(f1).isLessThan(far);
    }
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  @DisplayName(
      "several nodes racing for one key: exactly one winner per round, fences strictly increase")
  void racingNodes(Db db) throws Exception {
    String url = db.url();
    String table = TestDatabases.uniqueTable("race");
    int clients = 3;
    int threads = 6;
    // -DargLine=-Dfencing.rounds=150 for a longer run by hand
    int rounds = Integer.getInteger("fencing.rounds", 8);
    List<JdbcLockNode> nodes = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int i = 0; i < clients; i++) {
        nodes.add(JdbcLockNode.builder(url).table(table).createTable(true).poolSize(2).build());
      }
      long previous = 0;
      for (int round = 0; round < rounds; round++) {
        CountDownLatch start = new CountDownLatch(1);
        List<String> tokens = new ArrayList<>();
        List<Future<AcquireResult>> results = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
          JdbcLockNode n = nodes.get(i % clients);
          String token = "round" + round + "-" + i + "-" + UUID.randomUUID();
          tokens.add(token);
          results.add(
              pool.submit(
                  () -> {
                    start.await();
                    return n.tryAcquireFenced("contended", token, TTL).await(WAIT);
                  }));
        }
        start.countDown();
        List<Integer> winners = new ArrayList<>();
        long fence = 0;
        for (int i = 0; i < threads; i++) {
          AcquireResult r = results.get(i).get(60, TimeUnit.SECONDS);
          if (r.acquired()) {
            winners.add(i);
            fence = r.fence();
          } else {
            assertThat(r.fence()).as("a loser's fence").isZero();
          }
        }
        assertThat(winners).as("winners of round %d", round).hasSize(1);
        assertThat(fence)
            .as("fence of round %d (round before: %d)", round, previous)
            .isGreaterThan(previous);
        previous = fence;
        String winner = tokens.get(winners.get(0));
        // released through another node than the winner's: the row is shared, not the client
        assertThat(
                nodes.get((winners.get(0) + 1) % clients).release("contended", winner).await(WAIT))
            .isTrue();
      }
    } finally {
      pool.shutdownNow();
      nodes.forEach(JdbcLockNode::close);
    }
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  @DisplayName(
      "a table of an earlier version: plain locks work, fencing says which ALTER TABLE to run")
  void legacyTableWithoutCreate(Db db) {
    String url = db.url();
    String table = TestDatabases.uniqueTable("legacy");
    TestDatabases.execute(url, String.format(db.legacyDdl, table));
    try (JdbcLockNode node = JdbcLockNode.builder(url).table(table).build()) {
      assertThat(node.tryAcquire("k", "t", TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.extend("k", "t", TTL).await(WAIT)).isTrue();
      assertThat(node.release("k", "t").await(WAIT)).isTrue();

      String alter =
          "ALTER TABLE " + table + " ADD COLUMN fence " + db.counterType + " NOT NULL DEFAULT 0";
      assertThatThrownBy(() -> node.tryAcquireFenced("k", "t", TTL).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("has no fence column")
          .hasMessageContaining(alter)
          .hasMessageContaining("redlock.createTable=true");
      assertThatThrownBy(() -> node.raiseFence("k", "t", 5).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining(alter);

      // running the printed statement is enough: the same node notices the column
      TestDatabases.execute(url, alter);
      long fence = fenced(node, "k", "t2", TTL);
      assertThat(node.release("k", "t2").await(WAIT)).isTrue();
      assertThat(row(db, url, table, "k")).get().extracting(Row::fence).isEqualTo(fence);
    }
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  @DisplayName("a table of an earlier version gets the counter column when the node may create")
  void legacyTableWithCreate(Db db) {
    String url = db.url();
    String table = TestDatabases.uniqueTable("upgrade");
    TestDatabases.execute(url, String.format(db.legacyDdl, table));
    try (JdbcLockNode first = node(url, table);
        JdbcLockNode second = node(url, table)) {
      assertThat(first.tryAcquire("plain", "t", TTL).await(WAIT).acquired()).isTrue();
      long fence = fenced(second, "k", "t", TTL);
      assertThat(row(db, url, table, "k")).get().extracting(Row::fence).isEqualTo(fence);
      assertThat(first.release("plain", "t").await(WAIT)).isTrue();
      assertThat(first.release("k", "t").await(WAIT)).isTrue();
      assertThat(row(db, url, table, "k")).get().extracting(Row::fence).isEqualTo(fence);
    }
  }

  @ParameterizedTest
  @EnumSource(Db.class)
  @DisplayName("the DDL the node prints has the counter column")
  void ddlHasTheCounter(Db db) {
    String url = db.url();
    try (JdbcLockNode node = node(url, TestDatabases.uniqueTable("ddl"))) {
      assertThat(node.tryAcquire("k", "t", TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.createTableSql()).contains("fence").contains("NOT NULL DEFAULT 0");
    }
  }
}
