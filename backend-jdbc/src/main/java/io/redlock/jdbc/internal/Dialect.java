package io.redlock.jdbc.internal;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * The SQL of one database. Every operation is one atomic statement at the default isolation level,
 * and every time is read from the database server's clock. Parameters come in a fixed order:
 *
 * <ul>
 *   <li>acquire: key hash, key text, token, TTL (in {@link #ttlUnits})
 *   <li>release: key hash, token
 *   <li>extend: TTL, key hash, token
 *   <li>inspect: key hash; returns the token and the remaining time in microseconds
 * </ul>
 */
public abstract class Dialect {
  /** The databases with a dialect, as {@code DatabaseMetaData.getDatabaseProductName} says. */
  public static final List<String> SUPPORTED =
      List.of("PostgreSQL", "MariaDB", "MySQL", "SQLite", "H2");

  /** How a conditional insert answers. */
  public enum AcquireStyle {
    /** The update count is 1 when acquired, 0 when held. */
    ONE_ROW,
    /** MySQL-style ON DUPLICATE KEY UPDATE with affected rows: 1 inserted, 2 replaced, 0 held. */
    AFFECTED_ROWS
  }

  /** The dialect of a product name from {@code DatabaseMetaData}, or {@code null}. */
  public static Dialect forProduct(String productName) {
    String p = productName == null ? "" : productName.toLowerCase(Locale.ROOT);
    if (p.contains("postgres")) {
      return new PostgresDialect();
    }
    if (p.contains("mariadb")) {
      return new MariaDbDialect(false);
    }
    if (p.contains("mysql")) {
      return new MariaDbDialect(true);
    }
    if (p.contains("sqlite")) {
      return new SqliteDialect();
    }
    if (p.equals("h2")) {
      return new H2Dialect();
    }
    return null;
  }

  /** The dialect's name for messages. */
  public abstract String name();

  /** The statements that create the table if it does not exist (safe to run concurrently). */
  public abstract List<String> createTable(TableName table);

  /** The conditional insert. */
  public abstract String acquire(TableName table);

  /** How {@link #acquire} answers. */
  public AcquireStyle acquireStyle() {
    return AcquireStyle.ONE_ROW;
  }

  /** True if a racing insert may fail with a unique violation that means "held" (H2). */
  public boolean uniqueViolationMeansHeld() {
    return false;
  }

  /**
   * The compare-and-delete. If {@link #releaseReturnsLiveness()}, a query that deletes the row
   * whatever its expiry and returns one boolean row telling whether it was still live; else an
   * update deleting only a live row.
   */
  public abstract String release(TableName table);

  /** See {@link #release}. */
  public boolean releaseReturnsLiveness() {
    return true;
  }

  /** The compare-and-extend: an update whose count is 1 when extended. */
  public abstract String extend(TableName table);

  /** Reads a live key: token and remaining microseconds on the server's clock. */
  public abstract String inspect(TableName table);

  /** A query that fails if the table or one of its columns is missing. */
  public String probe(TableName table) {
    return "SELECT key_hash, lock_key, token, expires_at FROM " + table + " WHERE 1 = 0";
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
