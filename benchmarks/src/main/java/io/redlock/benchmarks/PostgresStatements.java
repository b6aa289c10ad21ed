package io.redlock.benchmarks;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The statements a PostgreSQL node runs for a plain (unfenced, unnotified) lock, copied from the
 * JDBC backend's PostgreSQL dialect, which the reactive backend runs too, so that the floors run
 * the same SQL on the same table. They are copied rather than taken from the backend's internal
 * classes so that the benchmarks keep compiling while those change; if the backend's SQL changes,
 * change it here too.
 */
final class PostgresStatements {
  static final String TABLE = "redlock_locks";

  /** The table as the backends create it, with the fencing counter column. */
  static final String CREATE_TABLE =
      "CREATE TABLE IF NOT EXISTS "
          + TABLE
          + " (\n"
          + "  key_hash   BYTEA       NOT NULL PRIMARY KEY,\n"
          + "  lock_key   TEXT        NOT NULL,\n"
          + "  token      BYTEA       NOT NULL,\n"
          + "  expires_at TIMESTAMPTZ NOT NULL,\n"
          + "  fence      BIGINT      NOT NULL DEFAULT 0\n"
          + ")";

  /** Parameters: key hash, key, token, TTL in microseconds. One row changed if acquired. */
  static final String ACQUIRE =
      "INSERT INTO "
          + TABLE
          + " AS l (key_hash, lock_key, token, expires_at) VALUES (?, ?, ?,"
          + " clock_timestamp() + ? * INTERVAL '1 microsecond') ON CONFLICT (key_hash) DO UPDATE"
          + " SET lock_key = EXCLUDED.lock_key, token = EXCLUDED.token,"
          + " expires_at = EXCLUDED.expires_at WHERE l.expires_at <= clock_timestamp()";

  /**
   * Parameters: key hash, token. Returns one row, true, if a live key held the token. The plain
   * compare-and-delete the JDBC backend runs to release a lock taken without fencing, on a table
   * with the fencing counter column (which the backends create) and without notifications: the
   * least a release can cost. ({@code fence = 0} leaves a fenced lock's row alone; the backend then
   * expires it with a second statement, which an unfenced lock never needs.)
   */
  static final String RELEASE =
      "DELETE FROM "
          + TABLE
          + " WHERE key_hash = ? AND token = ? AND fence = 0"
          + " RETURNING expires_at > clock_timestamp()";

  private PostgresStatements() {}

  /** Creates the table if missing (and adds the fence column a table of an older version lacks). */
  static void createTable(Connection connection) throws SQLException {
    synchronized (PostgresStatements.class) {
      try (Statement s = connection.createStatement()) {
        s.execute(CREATE_TABLE);
        s.execute(
            "ALTER TABLE " + TABLE + " ADD COLUMN IF NOT EXISTS fence BIGINT NOT NULL DEFAULT 0");
      } catch (SQLException raced) {
        // another JVM created or altered it at the same moment: fine if it is usable now
        try (Statement s = connection.createStatement()) {
          s.executeQuery("SELECT key_hash, fence FROM " + TABLE + " WHERE 1 = 0").close();
        }
      }
    }
  }

  /** The acquire statement for one key and token, prepared with all its parameters. */
  static PreparedStatement acquire(Connection c, String key, String token) throws SQLException {
    PreparedStatement ps = c.prepareStatement(ACQUIRE);
    ps.setBytes(1, sha256(key));
    ps.setString(2, key);
    ps.setBytes(3, token.getBytes(StandardCharsets.UTF_8));
    ps.setLong(4, Workload.TTL.toNanos() / 1_000);
    return ps;
  }

  /** The release statement for one key and token, prepared with all its parameters. */
  static PreparedStatement release(Connection c, String key, String token) throws SQLException {
    PreparedStatement ps = c.prepareStatement(RELEASE);
    ps.setBytes(1, sha256(key));
    ps.setBytes(2, token.getBytes(StandardCharsets.UTF_8));
    return ps;
  }

  /** The statement with PostgreSQL's numbered parameters ($1, $2, ...), for Vert.x's client. */
  static String numbered(String sql) {
    StringBuilder sb = new StringBuilder(sql.length() + 8);
    int n = 0;
    for (int i = 0; i < sql.length(); i++) {
      char c = sql.charAt(i);
      if (c == '?') {
        sb.append('$').append(++n);
      } else {
        sb.append(c);
      }
    }
    return sb.toString();
  }

  /** The primary key the backend stores for a key: SHA-256 of its UTF-8 bytes. */
  static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
