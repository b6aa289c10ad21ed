package io.redlock.jdbc.internal;

import java.util.List;

/**
 * PostgreSQL: {@code clock_timestamp()} is the server's real time at each call (not the
 * transaction's start, as {@code now()} is), with microsecond precision.
 */
final class PostgresDialect extends Dialect {
  private static final String EXPIRY = "clock_timestamp() + ? * INTERVAL '1 microsecond'";

  @Override
  public String name() {
    return "PostgreSQL";
  }

  @Override
  public List<String> createTable(TableName table) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + table
            + " (\n"
            + "  key_hash   BYTEA       NOT NULL PRIMARY KEY,\n"
            + "  lock_key   TEXT        NOT NULL,\n"
            + "  token      BYTEA       NOT NULL,\n"
            + "  expires_at TIMESTAMPTZ NOT NULL\n"
            + ")");
  }

  @Override
  public String acquire(TableName table) {
    return "INSERT INTO "
        + table
        + " AS l (key_hash, lock_key, token, expires_at) VALUES (?, ?, ?, "
        + EXPIRY
        + ") ON CONFLICT (key_hash) DO UPDATE SET lock_key = EXCLUDED.lock_key,"
        + " token = EXCLUDED.token, expires_at = EXCLUDED.expires_at"
        + " WHERE l.expires_at <= clock_timestamp()";
  }

  @Override
  public String release(TableName table) {
    return "DELETE FROM "
        + table
        + " WHERE key_hash = ? AND token = ? RETURNING expires_at > clock_timestamp()";
  }

  @Override
  public String extend(TableName table) {
    return "UPDATE "
        + table
        + " SET expires_at = "
        + EXPIRY
        + " WHERE key_hash = ? AND token = ? AND expires_at > clock_timestamp()";
  }

  @Override
  public String inspect(TableName table) {
    return "SELECT token, CAST(EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000000"
        + " AS BIGINT) FROM "
        + table
        + " WHERE key_hash = ? AND expires_at > clock_timestamp()";
  }
}
