package io.redlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.StaleFencingTokenException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link JdbcFencedUpdate} on every database, with leases from a fenced Redlock whose three lock
 * nodes are three databases of the shared PostgreSQL server (the lock service apart from the
 * protected data, as in production).
 */
@ParameterizedClass(name = "on {0}")
@EnumSource(JdbcFencedUpdateTest.Db.class)
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("JdbcFencedUpdate")
class JdbcFencedUpdateTest {
  private static final Duration LONG_TTL = Duration.ofSeconds(30);

  /** The databases, with how each quotes names and how it stores unquoted ones. */
  enum Db {
    POSTGRESQL("\"", false) {
      @Override
      String url() {
        return TestDatabases.postgres().jdbcUrl();
      }
    },
    MARIADB("`", false) {
      @Override
      String url() {
        return TestDatabases.mariadb().jdbcUrl();
      }
    },
    H2("\"", true) {
      @Override
      String url() {
        return TestDatabases.h2Url("fenced-update");
      }
    },
    SQLITE("\"", false) {
      @Override
      String url() {
        return TestDatabases.sqliteUrl("fenced-update");
      }
    };

    private final String quote;
    private final boolean upperCase;

    Db(String quote, boolean upperCase) {
      this.quote = quote;
      this.upperCase = upperCase;
    }

    /** A name quoted as this database stores an unquoted one (H2: upper case). */
    String quoted(String name) {
      return quote + (upperCase ? name.toUpperCase(Locale.ROOT) : name) + quote;
    }

    abstract String url();

    /** A URL for the test's own connections (SQLite: wait for other writers). */
    String rawUrl(String url) {
      return this == SQLITE ? TestDatabases.withOption(url, "busy_timeout", "10000") : url;
    }
  }

  private static String url;
  private static Redlock redlock;

  @Parameter Db db;

  private String table;
  private JdbcFencedUpdate update;

  /** Three PostgreSQL databases, one per lock node, made once per JVM. */
  private static List<String> lockDatabases;

  private static synchronized List<String> lockDatabases() {
    if (lockDatabases == null) {
      String base = TestDatabases.postgres().jdbcUrl();
      List<String> urls = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        String name = TestDatabases.uniqueTable("locks" + i);
        TestDatabases.execute(base, "CREATE DATABASE " + name);
        // jdbc:postgresql://host:port/DATABASE?options: the same server, another database
        urls.add(base.replaceFirst("^(jdbc:postgresql://[^/?]+/)[^?]*", "$1" + name));
      }
      lockDatabases = List.copyOf(urls);
    }
    return lockDatabases;
  }

  @BeforeParameterizedClassInvocation
  static void start(Db db) {
    url = db.url();
    List<JdbcLockNode> nodes = new ArrayList<>();
    for (String lockUrl : lockDatabases()) {
      nodes.add(JdbcLockNode.builder(lockUrl).createTable(true).poolSize(2).build());
    }
    redlock =
        Redlock.builder()
            .nodes(nodes)
            .allowSharedServers() // three databases of one test server
            .fencing(true)
            // generous for a busy 2-core machine; the default (TTL/50) is for production networks
            .nodeTimeout(Duration.ofMillis(300))
            .retry(5, Duration.ofMillis(10), Duration.ofMillis(50))
            .build();
    // creates the lock tables now, not within a short-lived lease's validity
    redlock.tryAcquire("warm-up", LONG_TTL).orElseThrow().close();
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    if (redlock != null) {
      redlock.close();
      redlock = null;
    }
  }

  @BeforeEach
  void createTable() {
    table = TestDatabases.uniqueTable("invoice");
    TestDatabases.execute(
        url,
        "CREATE TABLE "
            + table
            + " (id BIGINT PRIMARY KEY, amount INT, status VARCHAR(20),"
            + " fence BIGINT NOT NULL DEFAULT 0)");
    update = JdbcFencedUpdate.table(table).set("amount", "status").build();
  }

  private Connection connect() throws SQLException {
    return DriverManager.getConnection(db.rawUrl(url));
  }

  private void insert(long id) {
    TestDatabases.execute(
        db.rawUrl(url),
        "INSERT INTO " + table + " (id, amount, status) VALUES (" + id + ", 0, 'new')");
  }

  private record Row(int amount, String status, long fence) {}

  private Optional<Row> row(long id) throws SQLException {
    try (Connection c = connect();
        PreparedStatement ps =
            c.prepareStatement("SELECT amount, status, fence FROM " + table + " WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next()
            ? Optional.of(new Row(rs.getInt(1), rs.getString(2), rs.getLong(3)))
            : Optional.empty();
      }
    }
  }

  @Test
  @DisplayName(
      "a holder that paused past its validity is refused after a newer holder wrote, and the"
          + " newer values stay")
  void pausedHolderIsRefused() throws Exception {
    insert(1);
    String resource = "invoice-" + UUID.randomUUID();
    Lease a = redlock.tryAcquire(resource, Duration.ofMillis(300)).orElseThrow();
    long tokenA = a.fencingToken();
    Thread.sleep(700); // A "pauses" (GC, swap, a slow call) until its lease has run out
    assertThat(a.isValid()).as("A after its pause").isFalse();

    long tokenB;
    try (Lease b = redlock.tryAcquire(resource, LONG_TTL).orElseThrow();
        Connection c = connect()) {
      tokenB = b.fencingToken();
      assertThat(tokenB).as("B's token").isGreaterThan(tokenA);
      assertThat(update.execute(c, 1L, tokenB, 200, "by B")).isTrue();

      // A wakes up and writes what it computed before its pause
      assertThatThrownBy(() -> update.execute(c, 1L, tokenA, 100, "by A"))
          .isInstanceOfSatisfying(
              StaleFencingTokenException.class,
              e -> {
                assertThat(e.resource()).isEqualTo(table + "(id=1)");
                assertThat(e.token()).isEqualTo(tokenA);
                assertThat(e.highestAccepted()).isEqualTo(tokenB);
              })
          .hasMessageContaining("fencing token " + tokenA + " for '" + table + "(id=1)'");
    }
    assertThat(row(1)).contains(new Row(200, "by B", tokenB));
    a.close(); // releases nothing: A's rows expired
  }

  @Test
  @DisplayName("the first write on a fresh row (fence at its default 0) is accepted")
  void firstWriteOnFreshRow() throws SQLException {
    insert(7);
    assertThat(row(7)).contains(new Row(0, "new", 0));
    try (Connection c = connect()) {
      assertThat(update.execute(c, 7L, 5, 70, "paid")).isTrue();
    }
    assertThat(row(7)).contains(new Row(70, "paid", 5));
  }

  @Test
  @DisplayName("one lease may write many times: an equal token is accepted again")
  void equalTokenAcceptedTwice() throws SQLException {
    insert(2);
    try (Lease lease = redlock.tryAcquire("eq-" + UUID.randomUUID(), LONG_TTL).orElseThrow();
        Connection c = connect()) {
      long token = lease.fencingToken();
      assertThat(update.execute(c, 2L, token, 1, "first")).isTrue();
      assertThat(update.execute(c, 2L, token, 2, "second")).isTrue();
      assertThat(row(2)).contains(new Row(2, "second", token));
    }
  }

  @Test
  @DisplayName(
      "writing the very same values again reports true (on MariaDB even with useAffectedRows)")
  void identicalRewrite() throws SQLException {
    insert(3);
    String rawUrl =
        db == Db.MARIADB ? TestDatabases.withOption(url, "useAffectedRows", "true") : url;
    try (Connection c = DriverManager.getConnection(db.rawUrl(rawUrl))) {
      assertThat(update.execute(c, 3L, 9, 30, "same")).isTrue();
      assertThat(update.execute(c, 3L, 9, 30, "same")).as("nothing changes").isTrue();
      assertThatThrownBy(() -> update.execute(c, 3L, 8, 30, "same"))
          .isInstanceOf(StaleFencingTokenException.class);
    }
    assertThat(row(3)).contains(new Row(30, "same", 9));
  }

  @Test
  @DisplayName("a missing row is reported as false, not as stale, and nothing is inserted")
  void missingRow() throws SQLException {
    insert(4);
    try (Connection c = connect()) {
      assertThat(update.execute(c, 4L, 10, 40, "ten")).isTrue();
      assertThat(update.execute(c, 404L, 10, 1, "nowhere")).as("no row 404").isFalse();
      assertThat(update.execute(c, 404L, 1, 1, "nowhere")).as("a low token, no row").isFalse();
      assertThatThrownBy(() -> update.execute(c, 4L, 9, 1, "stale"))
          .isInstanceOf(StaleFencingTokenException.class);
    }
    assertThat(row(404)).isEmpty();
    assertThat(row(4)).contains(new Row(40, "ten", 10));
  }

  @Test
  @DisplayName("the update is part of the caller's transaction: a rollback undoes value and fence")
  void callersTransaction() throws SQLException {
    insert(5);
    try (Connection c = connect()) {
      c.setAutoCommit(false);
      assertThat(update.execute(c, 5L, 50, 1, "rolled back")).isTrue();
      c.rollback();
      assertThat(row(5)).contains(new Row(0, "new", 0));
      assertThat(update.execute(c, 5L, 20, 2, "committed")).isTrue();
      assertThatThrownBy(() -> update.execute(c, 5L, 19, 3, "stale"))
          .isInstanceOf(StaleFencingTokenException.class);
      c.commit();
    }
    assertThat(row(5)).contains(new Row(2, "committed", 20));
  }

  @Test
  @DisplayName("through a DataSource that does not auto-commit, each update commits by itself")
  void throughDataSource() throws SQLException {
    insert(6);
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.rawUrl(url));
    config.setAutoCommit(false);
    config.setMaximumPoolSize(1);
    try (HikariDataSource ds = new HikariDataSource(config)) {
      assertThat(update.execute(ds, 6L, 3, 60, "via pool")).isTrue();
      assertThat(update.execute(ds, 66L, 3, 60, "no row")).isFalse();
      assertThatThrownBy(() -> update.execute(ds, 6L, 2, 1, "stale"))
          .isInstanceOf(StaleFencingTokenException.class);
    }
    assertThat(row(6)).contains(new Row(60, "via pool", 3));
  }

  @Test
  @DisplayName("racing writers with interleaved tokens: the highest token's values are what stays")
  void racingWritersEndWithHighestToken() throws Exception {
    insert(8);
    int writers = 4;
    int tokens = 60;
    List<Long> all = new ArrayList<>(LongStream.rangeClosed(1, tokens).boxed().toList());
    Collections.shuffle(all, new Random(11));
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    CountDownLatch start = new CountDownLatch(1);
    try {
      List<Future<Integer>> results = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        int offset = w; // writer w takes every writers-th token of the shuffled list
        List<Long> share =
            IntStream.range(0, tokens)
                .filter(i -> i % writers == offset)
                .mapToObj(all::get)
                .toList();
        results.add(
            pool.submit(
                () -> {
                  int accepted = 0;
                  try (Connection c = connect()) {
                    start.await();
                    for (long t : share) {
                      try {
                        if (update.execute(c, 8L, t, (int) t, "token " + t)) {
                          accepted++;
                        }
                      } catch (StaleFencingTokenException expected) {
                        // a higher token was written first
                      }
                    }
                  }
                  return accepted;
                }));
      }
      start.countDown();
      int accepted = 0;
      for (Future<Integer> f : results) {
        accepted += f.get(90, TimeUnit.SECONDS);
      }
      assertThat(accepted).as("accepted writes").isBetween(1, tokens);
    } finally {
      pool.shutdownNow();
    }
    assertThat(row(8)).contains(new Row(tokens, "token " + tokens, tokens));
  }

  @Test
  @DisplayName("a reserved word as a column name works, and H2's upper-case names are found")
  void reservedWordColumn() throws SQLException {
    String orders = TestDatabases.uniqueTable("orders");
    TestDatabases.execute(
        url,
        "CREATE TABLE "
            + orders
            + " (id BIGINT PRIMARY KEY, "
            + db.quoted("order")
            + " INT, fence BIGINT NOT NULL DEFAULT 0)",
        "INSERT INTO " + orders + " (id, " + db.quoted("order") + ") VALUES (1, 0)");
    JdbcFencedUpdate setOrder = JdbcFencedUpdate.table(orders).set("order").build();
    try (Connection c = connect()) {
      assertThat(setOrder.updateSql(c))
          .isEqualTo(
              "UPDATE %s SET %s = ?, %s = ? WHERE %s = ? AND COALESCE(%s, 0) <= ?",
              db.quoted(orders),
              db.quoted("order"),
              db.quoted("fence"),
              db.quoted("id"),
              db.quoted("fence"));
      assertThat(setOrder.execute(c, 1L, 4, 44)).isTrue();
      assertThatThrownBy(() -> setOrder.execute(c, 1L, 3, 33))
          .isInstanceOf(StaleFencingTokenException.class);
      try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT " + db.quoted("order") + ", fence FROM " + orders + " WHERE id = 1");
          ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getInt(1)).isEqualTo(44);
        assertThat(rs.getLong(2)).isEqualTo(4);
      }
    }
  }

  @Test
  @DisplayName("a NULL fence counts as 0, and a null value is stored as NULL")
  void nullFenceAndNullValue() throws SQLException {
    String loose = TestDatabases.uniqueTable("loose");
    TestDatabases.execute(
        url,
        "CREATE TABLE " + loose + " (id BIGINT PRIMARY KEY, note VARCHAR(20), fence BIGINT)",
        "INSERT INTO " + loose + " (id, note) VALUES (1, 'x')");
    JdbcFencedUpdate setNote = JdbcFencedUpdate.table(loose).set("note").build();
    try (Connection c = connect()) {
      assertThat(setNote.execute(c, 1L, 1, (Object) null)).isTrue();
      try (PreparedStatement ps =
              c.prepareStatement("SELECT note, fence FROM " + loose + " WHERE id = 1");
          ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).isNull();
        assertThat(rs.getLong(2)).isEqualTo(1);
      }
    }
  }

  @Test
  @DisplayName("a table without the fence column fails with the ALTER TABLE to run, which works")
  void missingFenceColumn() throws SQLException {
    String legacy = TestDatabases.uniqueTable("legacy");
    TestDatabases.execute(
        url,
        "CREATE TABLE " + legacy + " (id BIGINT PRIMARY KEY, amount INT)",
        "INSERT INTO " + legacy + " (id, amount) VALUES (1, 0)");
    JdbcFencedUpdate setAmount = JdbcFencedUpdate.table(legacy).set("amount").build();
    String alter = "ALTER TABLE " + legacy + " ADD COLUMN fence BIGINT NOT NULL DEFAULT 0";
    assertThat(setAmount.addFenceColumnSql()).isEqualTo(alter);
    try (Connection c = connect()) {
      assertThatThrownBy(() -> setAmount.execute(c, 1L, 1, 10))
          .isInstanceOf(SQLException.class)
          .hasMessageContaining(alter);
    }
    TestDatabases.execute(url, alter);
    try (Connection c = connect()) {
      assertThat(setAmount.execute(c, 1L, 1, 10)).isTrue();
    }
  }

  @Test
  @DisplayName("names that are not plain identifiers and bad arguments are refused before any SQL")
  void badNamesAndArguments() throws SQLException {
    for (String bad : new String[] {null, "", "1abc", "a b", "x;DROP TABLE t", "a.b.c", "\"q\""}) {
      assertThatThrownBy(() -> JdbcFencedUpdate.table(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid table name");
      assertThatThrownBy(() -> JdbcFencedUpdate.table("t").set(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid column to set name");
    }
    assertThatThrownBy(() -> JdbcFencedUpdate.table("t").idColumn("id--"))
        .hasMessageContaining("invalid id column name 'id--'");
    assertThatThrownBy(() -> JdbcFencedUpdate.table("t").fenceColumn(""))
        .hasMessageContaining("invalid fence column name ''");
    assertThatThrownBy(() -> JdbcFencedUpdate.table("t").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("set(...)");
    assertThatThrownBy(() -> JdbcFencedUpdate.table("t").set("amount", "fence").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("the update sets the fence itself");
    assertThatThrownBy(() -> JdbcFencedUpdate.table("t").set("a", "a"))
        .hasMessageContaining("set twice");
    assertThat(JdbcFencedUpdate.table("app.t").set("a").build()).isNotNull();

    insert(9);
    try (Connection c = connect()) {
      assertThatThrownBy(() -> update.execute(c, 9L, 0, 1, "x"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("a fencing token is positive, got 0");
      assertThatThrownBy(() -> update.execute(c, null, 1, 1, "x"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("id must not be null");
      assertThatThrownBy(() -> update.execute(c, 9L, 1, 1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("expected 2 value(s), one for each of [amount, status], got 1");
    }
    assertThat(row(9)).contains(new Row(0, "new", 0));
  }
}
