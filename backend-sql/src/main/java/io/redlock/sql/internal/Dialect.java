package io.redlock.sql.internal;

import io.redlock.spi.NodeStatus;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The SQL of one database. Every operation is atomic on the server (one statement where the
 * database allows it; where it takes two, each is atomic and the JDBC backend's lock table argues
 * why the pair is still correct) at the default isolation level, and every time is read from the
 * database server's clock. Parameters come in a fixed order:
 *
 * <ul>
 *   <li>acquire, acquireFenced: key hash, key text, token, TTL (in {@link #ttlUnits})
 *   <li>release, releaseKept: key hash, token
 *   <li>extend: TTL, key hash, token
 *   <li>raiseFence: at least, key hash, token; raiseFenceRecheck: key hash, token, at least
 *   <li>inspect: key hash; returns the token and the remaining time in microseconds
 * </ul>
 *
 * <h2>Fencing counters</h2>
 *
 * <p>The {@code fence} column holds a per-key counter that outlives the lock: a fenced acquisition
 * sets it to {@code max(fence + 1, server time in microseconds since 1970)} in the same statement
 * that takes the key, and release keeps a row whose counter is not 0 (it expires it and clears its
 * token) instead of deleting it. The time floor makes the counter increase even after it was lost
 * (a database that forgot recent writes in a crash, a table recreated, a row deleted by hand or by
 * an older client), as long as the server's clock does not go back. Rows of keys that were never
 * fenced (counter 0) are still deleted on release, so plain locks leave nothing behind.
 */
public abstract class Dialect {
  /** The databases with a dialect, as {@code DatabaseMetaData.getDatabaseProductName} says. */
  public static final List<String> SUPPORTED =
      List.of("PostgreSQL", "MariaDB", "MySQL", "SQLite", "H2");

  /** The counter column, added by {@link #addFenceColumn} to tables of earlier versions. */
  public static final String FENCE_COLUMN = "fence";

  /** How a conditional insert answers. */
  public enum AcquireStyle {
    /** The update count is 1 when acquired, 0 when held. */
    ONE_ROW,
    /** MySQL-style ON DUPLICATE KEY UPDATE with affected rows: 1 inserted, 2 replaced, 0 held. */
    AFFECTED_ROWS
  }

  private final String name;
  private final String now;
  private final String expiry;
  private final String micros;
  private final String remainingMicros;
  private final String fenceAtLeast;

  /**
   * The dialect of a database whose clock and arithmetic are written as follows.
   *
   * @param name the dialect's name for messages
   * @param now the server's current time, of the type of {@code expires_at}, read by the statement
   * @param expiry the time a TTL parameter (in {@link #ttlUnits}) from now
   * @param micros now in microseconds since 1970-01-01 00:00 UTC, whatever the session's time zone
   * @param remainingMicros the microseconds from now to {@code expires_at}
   * @param fenceAtLeast the larger of the {@code fence} column and a parameter
   */
  protected Dialect(
      String name,
      String now,
      String expiry,
      String micros,
      String remainingMicros,
      String fenceAtLeast) {
    this.name = name;
    this.now = now;
    this.expiry = expiry;
    this.micros = micros;
    this.remainingMicros = remainingMicros;
    this.fenceAtLeast = fenceAtLeast;
  }

  /** The dialect's name for messages. */
  public final String name() {
    return name;
  }

  /** The statements that create the table if it does not exist (safe to run concurrently). */
  public abstract List<String> createTable(TableName table);

  /**
   * The lock table's {@code CREATE TABLE IF NOT EXISTS} in this dialect's column types, aligned.
   *
   * @param options what follows the column list ({@code ENGINE=InnoDB}, say), or ""
   */
  protected static String lockTable(
      TableName table,
      String hash,
      String text,
      String bytes,
      String time,
      String integer,
      String options) {
    int width =
        List.of(hash, text, bytes, time, integer).stream().mapToInt(String::length).max().orElse(0);
    String type = "%-" + width + "s NOT NULL";
    return "CREATE TABLE IF NOT EXISTS "
        + table
        + " (\n  key_hash   "
        + type.formatted(hash)
        + " PRIMARY KEY,\n  lock_key   "
        + type.formatted(text)
        + ",\n  token      "
        + type.formatted(bytes)
        + ",\n  expires_at "
        + type.formatted(time)
        + ",\n  fence      "
        + type.formatted(integer)
        + " DEFAULT 0\n)"
        + options;
  }

  /**
   * The start of a conditional insert, up to the expiry's value: {@code INSERT INTO table alias
   * (key_hash, lock_key, token, expires_at[, fence]) VALUES (?, ?, ?, }.
   */
  protected static String insertInto(TableName table, String alias, boolean fence) {
    return "INSERT INTO "
        + table
        + alias
        + " (key_hash, lock_key, token, expires_at"
        + (fence ? ", fence" : "")
        + ") VALUES (?, ?, ?, ";
  }

  /** The conditional insert; leaves the fencing counter of an existing row as it is. */
  public abstract String acquire(TableName table);

  /** How {@link #acquire} answers; {@link #acquireFenced} answers the same way. */
  public AcquireStyle acquireStyle() {
    return AcquireStyle.ONE_ROW;
  }

  /**
   * The conditional insert that also raises the fencing counter, atomically with it. If {@link
   * #fencedAcquireReturnsFence()}, a query returning one row with the new counter when acquired and
   * no row when held; else an update answering like {@link #acquire} whose first generated key is
   * the new counter.
   */
  public abstract String acquireFenced(TableName table);

  /** See {@link #acquireFenced}. */
  public boolean fencedAcquireReturnsFence() {
    return true;
  }

  /** True if a racing insert may fail with a unique violation that means "held" (H2). */
  public boolean uniqueViolationMeansHeld() {
    return false;
  }

  /**
   * The compare-and-delete. With {@code fenceColumn} (the table has the counter column), it deletes
   * only a row without a counter (the other kind is handled by {@link #releaseKept}, unless that is
   * empty because this one statement handles both). If {@link #releaseReturnsLiveness(boolean)}, a
   * query that returns one boolean row telling whether the released row was still live (and no row
   * if nothing was released); else an update whose count is 1 when a live row was released.
   */
  public abstract String release(TableName table, boolean fenceColumn);

  /** See {@link #release}. */
  public boolean releaseReturnsLiveness(boolean fenceColumn) {
    return true;
  }

  /**
   * The second half of release for dialects that cannot delete-or-update in one statement: an
   * update that expires a live row holding a counter, and clears its token; count 1 when released.
   */
  public Optional<String> releaseKept(TableName table) {
    return Optional.empty();
  }

  /**
   * One statement that releases both kinds of row (deletes one without a counter, expires one with
   * a counter), for a node that takes fenced locks: it spares those a second round trip, at the
   * cost of a heavier statement for rows without a counter. Empty where {@link #release} already
   * does both, or cannot.
   */
  public Optional<String> releaseCombined(TableName table) {
    return Optional.empty();
  }

  /**
   * For databases that count only changed rows (MySQL protocol with affected rows): a query
   * returning a row if the key is live, holds the token and has a counter of at least the value,
   * run when {@link #raiseFence} reported 0 rows.
   */
  public Optional<String> raiseFenceRecheck(TableName table) {
    return Optional.empty();
  }

  /** The compare-and-extend: an update whose count is 1 when extended. */
  public String extend(TableName table) {
    return "UPDATE " + table + " SET expires_at = " + expiry + " WHERE " + liveHolder();
  }

  /**
   * Raises the counter of a live key holding the token to at least a value: an update whose count
   * is 1 when the row matched, whether or not the value changed (but see {@link
   * #raiseFenceRecheck}).
   */
  public String raiseFence(TableName table) {
    return "UPDATE " + table + " SET fence = " + fenceAtLeast + " WHERE " + liveHolder();
  }

  /**
   * For {@link #releaseKept}: expires a live row with a counter and clears its token.
   *
   * @param noToken the empty token in this dialect
   * @param released an expiry long past
   */
  protected final String expireKept(TableName table, String noToken, String released) {
    return "UPDATE "
        + table
        + " SET token = "
        + noToken
        + ", expires_at = "
        + released
        + " WHERE fence <> 0 AND "
        + liveHolder();
  }

  private String liveHolder() {
    return "key_hash = ? AND token = ? AND expires_at > " + now;
  }

  /**
   * A query answering one row with one integer column: the database's current time, in microseconds
   * since 1970-01-01 00:00 UTC, from the clock its expiries use, read anew by this statement.
   */
  public String serverTimeMicros() {
    return "SELECT " + micros;
  }

  /** Reads a live key: token and remaining time in microseconds on the server's clock. */
  public String inspect(TableName table) {
    return "SELECT token, "
        + remainingMicros
        + " FROM "
        + table
        + " WHERE key_hash = ? AND expires_at > "
        + now;
  }

  /** A query that fails if the table or one of its columns (other than the counter) is missing. */
  public String probe(TableName table) {
    return "SELECT key_hash, lock_key, token, expires_at FROM " + table + " WHERE 1 = 0";
  }

  /** A query that fails if the table has no counter column. */
  public String probeFence(TableName table) {
    return "SELECT " + FENCE_COLUMN + " FROM " + table + " WHERE 1 = 0";
  }

  /** The statement that adds the counter column to a table created by an earlier version. */
  public String addFenceColumn(TableName table) {
    return "ALTER TABLE " + table + " ADD COLUMN " + FENCE_COLUMN + " BIGINT NOT NULL DEFAULT 0";
  }

  /**
   * What a status report needs to know.
   *
   * @param node the node's redacted name, for messages
   * @param table the lock table (its storage decides durability on some databases)
   * @param timeoutSeconds the statement timeout
   * @param mayCreate whether a missing bookkeeping table may be created
   */
  public record StatusContext(
      String node, TableName table, int timeoutSeconds, boolean mayCreate) {}

  /**
   * Reports the server's incarnation, uptime and durability.
   *
   * @param c a connection in auto-commit mode
   */
  public abstract NodeStatus status(Connection c, StatusContext context) throws SQLException;

  /** The {@code durability} detail of a status: "durable", or what stops it from being durable. */
  public static String durability(List<String> problems) {
    return problems.isEmpty() ? "durable" : "not durable: " + String.join(", ", problems);
  }

  /** The TTL as this dialect's parameter: whole units, rounded up so a lock never ends early. */
  public long ttlUnits(Duration ttl) {
    long micros = ttl.toNanos() / 1_000;
    return ttl.toNanos() % 1_000 == 0 ? micros : micros + 1;
  }

  /** The documented DDL, one statement per paragraph, for messages and the README. */
  public String ddlText(TableName table) {
    return String.join(";\n", createTable(table)) + ";";
  }
}
