package io.redlock.jdbc.internal;

import java.util.List;

/**
 * H2: {@code CURRENT_TIMESTAMP(9)} is the database's clock (the JVM's clock for an in-process
 * database) at the start of the statement. The conditional insert is a {@code MERGE ... USING}; two
 * racing inserts of an absent key can make the loser fail with a unique violation (SQLState 23505),
 * which means "held".
 */
final class H2Dialect extends Dialect {
  private static final String NOW = "CURRENT_TIMESTAMP(9)";

  @Override
  public String name() {
    return "H2";
  }

  @Override
  public List<String> createTable(TableName table) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + table
            + " (\n"
            + "  key_hash   BINARY(32)                  NOT NULL PRIMARY KEY,\n"
            + "  lock_key   CHARACTER VARYING           NOT NULL,\n"
            + "  token      BINARY VARYING              NOT NULL,\n"
            + "  expires_at TIMESTAMP(9) WITH TIME ZONE NOT NULL\n"
            + ")");
  }

  @Override
  public String acquire(TableName table) {
    return "MERGE INTO "
        + table
        + " AS l USING (VALUES (CAST(? AS BINARY(32)), CAST(? AS CHARACTER VARYING),"
        + " CAST(? AS BINARY VARYING), DATEADD(MICROSECOND, CAST(? AS BIGINT), "
        + NOW
        + "))) AS s (key_hash, lock_key, token, expires_at) ON l.key_hash = s.key_hash"
        + " WHEN MATCHED AND l.expires_at <= "
        + NOW
        + " THEN UPDATE SET lock_key = s.lock_key, token = s.token, expires_at = s.expires_at"
        + " WHEN NOT MATCHED THEN INSERT (key_hash, lock_key, token, expires_at)"
        + " VALUES (s.key_hash, s.lock_key, s.token, s.expires_at)";
  }

  @Override
  public boolean uniqueViolationMeansHeld() {
    return true;
  }

  @Override
  public String release(TableName table) {
    return "SELECT expires_at > "
        + NOW
        + " FROM OLD TABLE (DELETE FROM "
        + table
        + " WHERE key_hash = ? AND token = ?)";
  }

  @Override
  public String extend(TableName table) {
    return "UPDATE "
        + table
        + " SET expires_at = DATEADD(MICROSECOND, CAST(? AS BIGINT), "
        + NOW
        + ") WHERE key_hash = ? AND token = ? AND expires_at > "
        + NOW;
  }

  @Override
  public String inspect(TableName table) {
    return "SELECT token, DATEDIFF(MICROSECOND, "
        + NOW
        + ", expires_at) FROM "
        + table
        + " WHERE key_hash = ? AND expires_at > "
        + NOW;
  }
}
