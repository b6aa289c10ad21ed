package io.redlock.jdbc.internal;

import java.util.List;

/**
 * MariaDB and MySQL: {@code UTC_TIMESTAMP(6)} is the server's time with microseconds, independent
 * of the session's time zone (so DST changes and clients with other zones cannot shift expiries).
 * The conditional insert is {@code INSERT ... ON DUPLICATE KEY UPDATE} whose assignments keep the
 * old values unless the row expired; with {@code useAffectedRows=true} it reports 1 (inserted), 2
 * (expired row replaced) or 0 (held). The expiry is assigned last, because MySQL evaluates the
 * assignments left to right and later ones see earlier results.
 */
final class MariaDbDialect extends Dialect {
  private static final String NOW = "UTC_TIMESTAMP(6)";
  private static final String EXPIRED = "expires_at <= " + NOW;
  private final boolean mysql;

  MariaDbDialect(boolean mysql) {
    this.mysql = mysql;
  }

  @Override
  public String name() {
    return mysql ? "MySQL" : "MariaDB";
  }

  @Override
  public List<String> createTable(TableName table) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + table
            + " (\n"
            + "  key_hash   BINARY(32)  NOT NULL PRIMARY KEY,\n"
            + "  lock_key   TEXT CHARACTER SET utf8mb4 NOT NULL,\n"
            + "  token      BLOB        NOT NULL,\n"
            + "  expires_at DATETIME(6) NOT NULL\n"
            + ") ENGINE=InnoDB");
  }

  @Override
  public String acquire(TableName table) {
    return "INSERT INTO "
        + table
        + " (key_hash, lock_key, token, expires_at) VALUES (?, ?, ?, "
        + NOW
        + " + INTERVAL ? MICROSECOND) ON DUPLICATE KEY UPDATE"
        + " lock_key = IF("
        + EXPIRED
        + ", VALUES(lock_key), lock_key),"
        + " token = IF("
        + EXPIRED
        + ", VALUES(token), token),"
        + " expires_at = IF("
        + EXPIRED
        + ", VALUES(expires_at), expires_at)";
  }

  @Override
  public AcquireStyle acquireStyle() {
    return AcquireStyle.AFFECTED_ROWS;
  }

  @Override
  public String release(TableName table) {
    if (mysql) {
      // MySQL has no DELETE ... RETURNING: delete only a live row (an expired one stays until
      // the key is next acquired, which overwrites it)
      return "DELETE FROM " + table + " WHERE key_hash = ? AND token = ? AND expires_at > " + NOW;
    }
    return "DELETE FROM "
        + table
        + " WHERE key_hash = ? AND token = ? RETURNING expires_at > "
        + NOW;
  }

  @Override
  public boolean releaseReturnsLiveness() {
    return !mysql;
  }

  @Override
  public String extend(TableName table) {
    return "UPDATE "
        + table
        + " SET expires_at = "
        + NOW
        + " + INTERVAL ? MICROSECOND WHERE key_hash = ? AND token = ? AND expires_at > "
        + NOW;
  }

  @Override
  public String inspect(TableName table) {
    return "SELECT token, TIMESTAMPDIFF(MICROSECOND, "
        + NOW
        + ", expires_at) FROM "
        + table
        + " WHERE key_hash = ? AND expires_at > "
        + NOW;
  }

  /** A statement that inserts-or-keeps an expired probe row; counts tell the row-count mode. */
  String affectedRowsProbe(TableName table) {
    return "INSERT INTO "
        + table
        + " (key_hash, lock_key, token, expires_at) VALUES (?, '', '', '1970-01-02 00:00:00')"
        + " ON DUPLICATE KEY UPDATE expires_at = expires_at";
  }
}
