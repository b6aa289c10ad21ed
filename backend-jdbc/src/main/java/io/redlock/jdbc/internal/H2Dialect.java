package io.redlock.jdbc.internal;

import io.redlock.spi.NodeStatus;
import io.redlock.sql.internal.Dialect;
import io.redlock.sql.internal.TableName;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * H2: {@code CURRENT_TIMESTAMP(9)} is the database's clock (the JVM's clock for an in-process
 * database) at the start of the statement. The conditional insert is a {@code MERGE ... USING}; two
 * racing inserts of an absent key can make the loser fail with a unique violation (SQLState 23505),
 * which means "held". Statements that must return what they changed read it from a data change
 * delta table ({@code FINAL TABLE}, {@code OLD TABLE}), which is part of the same statement.
 */
final class H2Dialect extends Dialect {
  private static final String NOW = "CURRENT_TIMESTAMP(9)";
  private static final String EPOCH = "TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00'";
  // EXTRACT(EPOCH ..) of a TIMESTAMP WITH TIME ZONE is a true instant; DATEDIFF from a 1970 literal
  // was off by the session's UTC offset (13 h at UTC+13), which could lower the fencing floor
  private static final String MICROS = "CAST(EXTRACT(EPOCH FROM " + NOW + ") * 1000000 AS BIGINT)";

  H2Dialect() {
    super(
        "H2",
        NOW,
        "DATEADD(MICROSECOND, CAST(? AS BIGINT), " + NOW + ")",
        MICROS,
        "DATEDIFF(MICROSECOND, " + NOW + ", expires_at)",
        "GREATEST(fence, CAST(? AS BIGINT))");
  }

  @Override
  public List<String> createTable(TableName table) {
    return List.of(
        lockTable(
            table,
            "BINARY(32)",
            "CHARACTER VARYING",
            "BINARY VARYING",
            "TIMESTAMP(9) WITH TIME ZONE",
            "BIGINT",
            ""),
        incarnation(table).create());
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

  /** One statement: the merge, read back through {@code FINAL TABLE}. */
  @Override
  public String acquireFenced(TableName table) {
    return "SELECT fence FROM FINAL TABLE (MERGE INTO "
        + table
        + " AS l USING (VALUES (CAST(? AS BINARY(32)), CAST(? AS CHARACTER VARYING),"
        + " CAST(? AS BINARY VARYING), DATEADD(MICROSECOND, CAST(? AS BIGINT), "
        + NOW
        + "), "
        + MICROS
        + ")) AS s (key_hash, lock_key, token, expires_at, fence) ON l.key_hash = s.key_hash"
        + " WHEN MATCHED AND l.expires_at <= "
        + NOW
        + " THEN UPDATE SET lock_key = s.lock_key, token = s.token, expires_at = s.expires_at,"
        + " fence = GREATEST(l.fence + 1, s.fence)"
        + " WHEN NOT MATCHED THEN INSERT (key_hash, lock_key, token, expires_at, fence)"
        + " VALUES (s.key_hash, s.lock_key, s.token, s.expires_at, s.fence))";
  }

  @Override
  public boolean uniqueViolationMeansHeld() {
    return true;
  }

  /**
   * One statement: a merge that deletes the caller's row without a counter and expires a live one
   * with a counter (clearing its token); {@code OLD TABLE} returns the row as it was, for liveness.
   */
  @Override
  public String release(TableName table, boolean fenceColumn) {
    if (!fenceColumn) {
      return "SELECT expires_at > "
          + NOW
          + " FROM OLD TABLE (DELETE FROM "
          + table
          + " WHERE key_hash = ? AND token = ?)";
    }
    return "SELECT expires_at > "
        + NOW
        + " FROM OLD TABLE (MERGE INTO "
        + table
        + " AS l USING (VALUES (CAST(? AS BINARY(32)), CAST(? AS BINARY VARYING))) AS s (k, t)"
        + " ON l.key_hash = s.k AND l.token = s.t"
        + " WHEN MATCHED AND l.fence = 0 THEN DELETE"
        + " WHEN MATCHED AND l.expires_at > "
        + NOW
        + " THEN UPDATE SET token = X'', expires_at = "
        + EPOCH
        + ")";
  }

  /**
   * Incarnation: a random identity in a {@code NOT PERSISTENT} table, whose rows (not its
   * definition) are gone whenever the database is closed or its process ends, so the identity
   * changes with every opening of the database. Durable: a file database with {@code WRITE_DELAY}
   * 0, which writes every commit to the file before it returns and so keeps it across a crash of
   * the process that runs H2 (H2 does not sync each commit to the disk, so a power failure can
   * still lose it); an in-memory database, or the default delay of 500 ms, loses recent locks.
   */
  @Override
  public NodeStatus status(Connection c, StatusContext context) throws SQLException {
    String path;
    String version;
    String writeDelay;
    try (Statement s = c.createStatement()) {
      s.setQueryTimeout(context.timeoutSeconds());
      try (ResultSet rs =
          s.executeQuery(
              // a database lists WRITE_DELAY twice once it was ever set (the stored setting and
              // the one in effect): the largest of them, to be safe
              "SELECT DATABASE_PATH(), H2VERSION(), (SELECT MAX(CAST(SETTING_VALUE AS INT)) FROM"
                  + " INFORMATION_SCHEMA.SETTINGS WHERE SETTING_NAME = 'WRITE_DELAY')")) {
        rs.next();
        path = rs.getString(1);
        version = rs.getString(2);
        writeDelay = rs.getString(3);
      }
    }
    IncarnationTable.Stored stored = incarnation(context.table()).read(c, context);
    List<String> problems = new ArrayList<>();
    if (path == null) {
      problems.add("an in-memory database");
    } else if (!"0".equals(writeDelay)) {
      problems.add("WRITE_DELAY=" + writeDelay + " (SET WRITE_DELAY 0 writes every commit)");
    }
    Map<String, String> details = new LinkedHashMap<>();
    details.put("version", version);
    details.put("database", path == null ? "(memory)" : path);
    details.put("write_delay", String.valueOf(writeDelay));
    details.put("durability", durability(problems));
    return new NodeStatus("h2-" + stored.incarnation(), stored.age(), problems.isEmpty(), details);
  }

  private static IncarnationTable incarnation(TableName table) {
    String name = IncarnationTable.nameFor(table);
    return new IncarnationTable(
        name,
        "CREATE MEMORY TABLE IF NOT EXISTS "
            + name
            + " (\n"
            + "  id          INT                         NOT NULL PRIMARY KEY,\n"
            + "  incarnation CHARACTER VARYING           NOT NULL,\n"
            + "  created_at  TIMESTAMP(9) WITH TIME ZONE NOT NULL\n"
            + ") NOT PERSISTENT",
        "INSERT INTO "
            + name
            + " (id, incarnation, created_at) SELECT 1, CAST(? AS CHARACTER VARYING), "
            + NOW
            + " WHERE NOT EXISTS (SELECT 1 FROM "
            + name
            + ")",
        "SELECT incarnation, DATEDIFF(MICROSECOND, created_at, "
            + NOW
            + ") FROM "
            + name
            + " WHERE id = 1");
  }
}
