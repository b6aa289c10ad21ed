package io.redlock.jdbc.internal;

import java.time.Duration;
import java.util.List;

/**
 * SQLite: the "server" is the SQLite library in each process, reading the operating system's clock;
 * all processes sharing the file share that machine's clock. {@code julianday('now')} has
 * millisecond resolution and is fixed for the duration of one statement; expiries are stored as
 * Unix milliseconds.
 */
final class SqliteDialect extends Dialect {
  private static final String NOW =
      "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";

  @Override
  public String name() {
    return "SQLite";
  }

  @Override
  public List<String> createTable(TableName table) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + table
            + " (\n"
            + "  key_hash   BLOB    NOT NULL PRIMARY KEY,\n"
            + "  lock_key   TEXT    NOT NULL,\n"
            + "  token      BLOB    NOT NULL,\n"
            + "  expires_at INTEGER NOT NULL\n"
            + ") WITHOUT ROWID");
  }

  @Override
  public String acquire(TableName table) {
    return "INSERT INTO "
        + table
        + " (key_hash, lock_key, token, expires_at) VALUES (?, ?, ?, "
        + NOW
        + " + ?) ON CONFLICT (key_hash) DO UPDATE SET lock_key = excluded.lock_key,"
        + " token = excluded.token, expires_at = excluded.expires_at WHERE expires_at <= "
        + NOW;
  }

  @Override
  public String release(TableName table) {
    return "DELETE FROM "
        + table
        + " WHERE key_hash = ? AND token = ? RETURNING expires_at > "
        + NOW;
  }

  @Override
  public String extend(TableName table) {
    return "UPDATE "
        + table
        + " SET expires_at = "
        + NOW
        + " + ? WHERE key_hash = ? AND token = ? AND expires_at > "
        + NOW;
  }

  @Override
  public String inspect(TableName table) {
    return "SELECT token, (expires_at - "
        + NOW
        + ") * 1000 FROM "
        + table
        + " WHERE key_hash = ? AND expires_at > "
        + NOW;
  }

  /** Milliseconds, rounded up. */
  @Override
  public long ttlUnits(Duration ttl) {
    long millis = ttl.toMillis();
    return ttl.minusMillis(millis).isZero() ? millis : millis + 1;
  }
}
