package io.redlock.sql.internal;

import io.redlock.spi.NodeStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * PostgreSQL: {@code clock_timestamp()} is the server's real time at each call (not the
 * transaction's start, as {@code now()} is), with microsecond precision. Public for the reactive
 * PostgreSQL backend ({@code redlock-backend-postgres}), which runs these same statements.
 */
public final class PostgresDialect extends Dialect {
  /** Whether release statements also notify the table's channel (see releaseChannel). */
  private final boolean notify;

  /** The dialect whose release statements do not notify. */
  public PostgresDialect() {
    this(false);
  }

  private PostgresDialect(boolean notify) {
    super(
        "PostgreSQL",
        NOW,
        EXPIRY,
        MICROS,
        "CAST(EXTRACT(EPOCH FROM (expires_at - " + NOW + ")) * 1000000 AS BIGINT)",
        "GREATEST(fence, ?)");
    this.notify = notify;
  }

  /** The same dialect, with release statements that notify the table's channel. */
  public PostgresDialect notifyingReleases() {
    return new PostgresDialect(true);
  }

  private static final String NOW = "clock_timestamp()";
  private static final String EXPIRY = NOW + " + ? * INTERVAL '1 microsecond'";
  private static final String MICROS = "CAST(EXTRACT(EPOCH FROM " + NOW + ") * 1000000 AS BIGINT)";
  private static final String RELEASED = "TIMESTAMPTZ '1970-01-01 00:00:00+00'";

  @Override
  public List<String> createTable(TableName table) {
    return List.of(lockTable(table, "BYTEA", "TEXT", "BYTEA", "TIMESTAMPTZ", "BIGINT", ""));
  }

  @Override
  public String acquire(TableName table) {
    return insertInto(table, " AS l", false)
        + EXPIRY
        + ") ON CONFLICT (key_hash) DO UPDATE SET lock_key = EXCLUDED.lock_key,"
        + " token = EXCLUDED.token, expires_at = EXCLUDED.expires_at"
        + " WHERE l.expires_at <= "
        + NOW;
  }

  /** One statement: the insert-or-take-over and the counter's increment are one row change. */
  @Override
  public String acquireFenced(TableName table) {
    return insertInto(table, " AS l", true)
        + EXPIRY
        + ", "
        + MICROS
        + ") ON CONFLICT (key_hash) DO UPDATE SET lock_key = EXCLUDED.lock_key,"
        + " token = EXCLUDED.token, expires_at = EXCLUDED.expires_at,"
        + " fence = GREATEST(l.fence + 1, EXCLUDED.fence)"
        + " WHERE l.expires_at <= "
        + NOW
        + " RETURNING l.fence";
  }

  /**
   * The compare-and-delete. On a table with the counter column, and without notifications, the
   * plain delete of a row without a counter: as cheap as a release can be, for the locks that are
   * not fenced; a row with a counter is left to {@link #releaseKept}. With notifications, or on a
   * node that takes fenced locks, {@link #releaseCombined} does both in one statement.
   */
  @Override
  public String release(TableName table, boolean fenceColumn) {
    // With notifications on, a release also notifies the table's channel with the key's hash
    // (delivered at commit to the nodes that LISTEN); an expiry
    // notifies no one.
    if (fenceColumn && this.notify) {
      return releaseCombined(table).orElseThrow();
    }
    String onlyUnfenced = fenceColumn ? " AND fence = 0" : "";
    if (!this.notify) {
      return "DELETE FROM "
          + table
          + " WHERE key_hash = ? AND token = ?"
          + onlyUnfenced
          + " RETURNING expires_at > "
          + NOW;
    }
    return "WITH r AS (DELETE FROM "
        + table
        + " WHERE key_hash = ? AND token = ? RETURNING key_hash AS k, expires_at > "
        + NOW
        + " AS live) SELECT r.live"
        + notifyColumn(table)
        + " FROM r";
  }

  /** Without notifications: expires a live row with a counter and clears its token. */
  @Override
  public Optional<String> releaseKept(TableName table) {
    if (this.notify) {
      return Optional.empty(); // the release statement is the combined one
    }
    return Optional.of(expireKept(table, "CAST('' AS BYTEA)", RELEASED));
  }

  /**
   * One statement: a row without a counter is deleted, a row with one is expired and its token
   * cleared; the two predicates ({@code fence = 0}, {@code fence <> 0}) are disjoint, so at most
   * one part touches the row. The one race this leaves: the same holder raising the counter of a
   * key it acquired without fencing while releasing it can make release find nothing and answer
   * false; the key then stays held until its TTL runs out (never freed early, so still safe).
   */
  @Override
  public Optional<String> releaseCombined(TableName table) {
    return Optional.of(
        "WITH p (k, t) AS (VALUES (CAST(? AS BYTEA), CAST(? AS BYTEA))),"
            + " d AS (DELETE FROM "
            + table
            + " l USING p WHERE l.key_hash = p.k AND l.token = p.t AND l.fence = 0"
            + " RETURNING l.key_hash AS k, l.expires_at > "
            + NOW
            + " AS live),"
            + " u AS (UPDATE "
            + table
            + " l SET token = CAST('' AS BYTEA), expires_at = "
            + RELEASED
            + " FROM p WHERE l.key_hash = p.k AND l.token = p.t AND l.fence <> 0"
            + " AND l.expires_at > "
            + NOW
            + " RETURNING l.key_hash AS k, TRUE AS live),"
            + " r AS (SELECT k, live FROM d UNION ALL SELECT k, live FROM u)"
            + " SELECT r.live"
            + notifyColumn(table)
            + " FROM r");
  }

  private String notifyColumn(TableName table) {
    return this.notify ? ", pg_notify('" + releaseChannel(table) + "', encode(r.k, 'hex'))" : "";
  }

  /**
   * The channel on which a table's releases are notified: {@code redlock:} and the table's name,
   * cut to PostgreSQL's 63-byte limit for channel names (tables whose names share such a prefix
   * share a channel; a listener ignores keys it does not wait for). Table names are plain
   * identifiers, so the result is safe inside a SQL string literal.
   */
  public static String releaseChannel(TableName table) {
    String channel = "redlock:" + table;
    return channel.length() > 63 ? channel.substring(0, 63) : channel;
  }

  /**
   * Incarnation: the postmaster's start time, which a restart (clean, crash or kill) changes.
   * Durable: fsync on, {@code synchronous_commit} not off (else the last commits can be lost in a
   * crash), and the table logged (an unlogged table is emptied after a crash, a temporary one
   * belongs to one session).
   */
  @Override
  public NodeStatus status(Connection c, StatusContext context) throws SQLException {
    TableName table = context.table();
    try (PreparedStatement ps = c.prepareStatement(statusQuery())) {
      ps.setQueryTimeout(context.timeoutSeconds());
      ps.setString(1, table.value());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return status(
            table,
            rs.getObject(1, OffsetDateTime.class),
            rs.getLong(2),
            rs.getString(3),
            rs.getString(4),
            rs.getString(5),
            rs.getString(6),
            rs.getString(7));
      }
    }
  }

  /**
   * The status query: one parameter, the table's name; one row of {@code
   * pg_postmaster_start_time()}, the uptime in µs, {@code fsync}, {@code synchronous_commit},
   * {@code full_page_writes}, {@code server_version} and the table's {@code relpersistence}: the
   * columns {@link #status(TableName, OffsetDateTime, long, String, String, String, String,
   * String)} takes.
   */
  public static String statusQuery() {
    return "SELECT pg_postmaster_start_time(),"
        + " CAST(EXTRACT(EPOCH FROM ("
        + NOW
        + " - pg_postmaster_start_time())) * 1000000 AS BIGINT),"
        + " current_setting('fsync'), current_setting('synchronous_commit'),"
        + " current_setting('full_page_writes'), current_setting('server_version'),"
        + " (SELECT relpersistence FROM pg_class WHERE oid = to_regclass(?))";
  }

  /** The status from the columns of {@link #statusQuery()}'s row, in its order. */
  public static NodeStatus status(
      TableName table,
      OffsetDateTime started,
      long upMicros,
      String fsync,
      String synchronousCommit,
      String fullPageWrites,
      String version,
      String relpersistence) {
    String persistence = persistence(relpersistence);
    List<String> problems = new ArrayList<>();
    if (!"on".equals(fsync)) {
      problems.add("fsync=" + fsync);
    }
    if ("off".equals(synchronousCommit)) {
      problems.add("synchronous_commit=off");
    }
    if (!"logged".equals(persistence)) {
      problems.add("table " + table + " is " + persistence);
    }
    Map<String, String> details = new LinkedHashMap<>();
    details.put("version", version);
    details.put("started", started.withOffsetSameInstant(ZoneOffset.UTC).toString());
    details.put("fsync", fsync);
    details.put("synchronous_commit", synchronousCommit);
    details.put("full_page_writes", fullPageWrites);
    details.put("table", persistence);
    details.put("durability", durability(problems));
    return new NodeStatus(
        "postgresql-started-" + started.withOffsetSameInstant(ZoneOffset.UTC),
        Duration.ofNanos(Math.max(0, upMicros) * 1_000),
        problems.isEmpty(),
        details);
  }

  private static String persistence(String relpersistence) {
    if (relpersistence == null) {
      return "not found";
    }
    return switch (relpersistence) {
      case "p" -> "logged";
      case "u" -> "unlogged";
      case "t" -> "temporary";
      default -> "of persistence '" + relpersistence + "'";
    };
  }
}
