package io.redlock.jdbc.internal;

import io.redlock.spi.NodeStatus;
import io.redlock.sql.internal.Dialect;
import io.redlock.sql.internal.TableName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * MariaDB and MySQL: {@code UTC_TIMESTAMP(6)} is the server's time with microseconds, independent
 * of the session's time zone (so DST changes and clients with other zones cannot shift expiries).
 * The conditional insert is {@code INSERT ... ON DUPLICATE KEY UPDATE} whose assignments keep the
 * old values unless the row expired; with {@code useAffectedRows=true} it reports 1 (inserted), 2
 * (expired row replaced) or 0 (held). The expiry is assigned last, because MySQL evaluates the
 * assignments left to right and later ones see earlier results.
 *
 * <p>A fenced acquisition returns its counter through {@code LAST_INSERT_ID(expr)}, which the
 * server reports in the statement's OK packet (the driver's generated key): no second statement.
 */
final class MariaDbDialect extends Dialect {
  private static final String NOW = "UTC_TIMESTAMP(6)";
  private static final String EXPIRED = "expires_at <= " + NOW;
  private static final String LIVE = "expires_at > " + NOW;
  private static final String MICROS =
      "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " + NOW + ")";
  private static final String RELEASED = "'1970-01-01 00:00:00'";
  private final boolean mysql;

  MariaDbDialect(boolean mysql) {
    super(
        mysql ? "MySQL" : "MariaDB",
        NOW,
        NOW + " + INTERVAL ? MICROSECOND",
        MICROS,
        "TIMESTAMPDIFF(MICROSECOND, " + NOW + ", expires_at)",
        "GREATEST(fence, ?)");
    this.mysql = mysql;
  }

  @Override
  public List<String> createTable(TableName table) {
    return List.of(
        lockTable(
            table,
            "BINARY(32)",
            "TEXT CHARACTER SET utf8mb4",
            "BLOB",
            "DATETIME(6)",
            "BIGINT",
            " ENGINE=InnoDB"));
  }

  @Override
  public String acquire(TableName table) {
    return insertInto(table, "", false)
        + NOW
        + " + INTERVAL ? MICROSECOND)"
        + onExpired("lock_key", "token", "expires_at");
  }

  /**
   * One statement: the counter is assigned before the expiry (assignments run left to right and the
   * test for expiry reads {@code expires_at}), only when the row is taken over, and passes through
   * {@code LAST_INSERT_ID(expr)} so that the OK packet carries it. A held key leaves the insert's
   * own {@code LAST_INSERT_ID} behind, which is never read.
   */
  @Override
  public String acquireFenced(TableName table) {
    return insertInto(table, "", true)
        + NOW
        + " + INTERVAL ? MICROSECOND, LAST_INSERT_ID("
        + MICROS
        + "))"
        + onExpired("lock_key", "token", "fence", "expires_at");
  }

  /**
   * {@code ON DUPLICATE KEY UPDATE} that gives the columns, in this order, the inserted values only
   * if the row expired (the counter raised and passed through {@code LAST_INSERT_ID}).
   */
  private static String onExpired(String... columns) {
    List<String> set = new ArrayList<>();
    for (String c : columns) {
      String value =
          c.equals("fence")
              ? "LAST_INSERT_ID(GREATEST(fence + 1, VALUES(fence)))"
              : "VALUES(" + c + ")";
      set.add(c + " = IF(" + EXPIRED + ", " + value + ", " + c + ")");
    }
    return " ON DUPLICATE KEY UPDATE " + String.join(", ", set);
  }

  @Override
  public AcquireStyle acquireStyle() {
    return AcquireStyle.AFFECTED_ROWS;
  }

  @Override
  public boolean fencedAcquireReturnsFence() {
    return false;
  }

  @Override
  public boolean releaseReturnsLiveness(boolean fenceColumn) {
    return !mysql;
  }

  /**
   * With the counter column, releasing takes two statements: this one deletes a row without a
   * counter, {@link #releaseKept} expires one with a counter. Each is atomic and re-reads the row
   * it locks; a counter never returns to 0 and a token is never reused, so the pair answers true
   * only if one of them found the caller's live key (see {@link LockTable#release}).
   */
  @Override
  public String release(TableName table, boolean fenceColumn) {
    String kept = fenceColumn ? " AND fence = 0" : "";
    if (mysql) {
      // MySQL has no DELETE ... RETURNING: delete only a live row (an expired one stays until
      // the key is next acquired, which overwrites it)
      return "DELETE FROM " + table + " WHERE key_hash = ? AND token = ?" + kept + " AND " + LIVE;
    }
    return "DELETE FROM "
        + table
        + " WHERE key_hash = ? AND token = ?"
        + kept
        + " RETURNING "
        + LIVE;
  }

  @Override
  public Optional<String> releaseKept(TableName table) {
    return Optional.of(expireKept(table, "''", RELEASED));
  }

  /**
   * Run when {@link #raiseFence} changed nothing: the key may hold the token with a counter that is
   * already high enough. A key cannot come back to life with a token it lost, and a counter never
   * goes down, so a row found here was also live with this token when the update ran.
   */
  @Override
  public Optional<String> raiseFenceRecheck(TableName table) {
    return Optional.of(
        "SELECT 1 FROM "
            + table
            + " WHERE key_hash = ? AND token = ? AND "
            + LIVE
            + " AND fence >= ?");
  }

  /**
   * Incarnation: the server's start time in whole seconds, {@code UNIX_TIMESTAMP() - Uptime} in one
   * statement (both count from the statement's start second, so the difference is exact), and its
   * host name and port, which tell apart servers started in the same second. Durable: the table is
   * InnoDB and {@code innodb_flush_log_at_trx_commit} is 1 (or MariaDB's 3), which writes and syncs
   * the redo log at every commit.
   */
  @Override
  public NodeStatus status(Connection c, StatusContext context) throws SQLException {
    TableName table = context.table();
    String statusTable =
        mysql ? "performance_schema.global_status" : "information_schema.GLOBAL_STATUS";
    String sql =
        "SELECT UNIX_TIMESTAMP() - CAST(s.VARIABLE_VALUE AS SIGNED), CAST(s.VARIABLE_VALUE AS"
            + " SIGNED), VERSION(), @@innodb_flush_log_at_trx_commit, @@log_bin, @@sync_binlog,"
            + " (SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(?,"
            + " DATABASE()) AND TABLE_NAME = ?), @@hostname, @@port FROM "
            + statusTable
            + " s WHERE UPPER(s.VARIABLE_NAME) = 'UPTIME'";
    String value = table.value();
    int dot = value.indexOf('.');
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setQueryTimeout(context.timeoutSeconds());
      ps.setString(1, dot < 0 ? null : value.substring(0, dot));
      ps.setString(2, dot < 0 ? value : value.substring(dot + 1));
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new SQLException(
              "the server reports no Uptime in " + statusTable + " (performance_schema off?)");
        }
        long started = rs.getLong(1);
        // Uptime is now minus the start time, both in whole seconds: up to a second more than the
        // truth. Take the second off, so that it is rounded down, never up (restart quarantine).
        long uptimeSeconds = Math.max(0, rs.getLong(2) - 1);
        String flush = rs.getString(4);
        String engine = rs.getString(7);
        List<String> problems = new ArrayList<>();
        if (!"InnoDB".equalsIgnoreCase(engine)) {
          problems.add("table " + table + " uses engine " + (engine == null ? "unknown" : engine));
        }
        if (!"1".equals(flush) && !"3".equals(flush)) {
          problems.add("innodb_flush_log_at_trx_commit=" + flush);
        }
        Map<String, String> details = new LinkedHashMap<>();
        details.put("version", rs.getString(3));
        details.put("started", java.time.Instant.ofEpochSecond(started).toString());
        details.put("engine", engine == null ? "unknown" : engine);
        details.put("innodb_flush_log_at_trx_commit", flush);
        details.put("log_bin", rs.getString(5));
        details.put("sync_binlog", rs.getString(6));
        details.put("durability", durability(problems));
        return new NodeStatus(
            name().toLowerCase(java.util.Locale.ROOT)
                + "-started-"
                + started
                + "-"
                + rs.getString(8)
                + ":"
                + rs.getString(9),
            Duration.ofSeconds(uptimeSeconds),
            problems.isEmpty(),
            details);
      }
    }
  }

  /** A statement that inserts-or-keeps an expired probe row; counts tell the row-count mode. */
  String affectedRowsProbe(TableName table) {
    return "INSERT INTO "
        + table
        + " (key_hash, lock_key, token, expires_at) VALUES (?, '', '', '1970-01-02 00:00:00')"
        + " ON DUPLICATE KEY UPDATE expires_at = expires_at";
  }
}
