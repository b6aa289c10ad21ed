package io.redlock.jdbc.internal;

import io.redlock.spi.NodeStatus;
import io.redlock.sql.internal.Dialect;
import io.redlock.sql.internal.TableName;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * SQLite: the "server" is the SQLite library in each process, reading the operating system's clock;
 * all processes sharing the file share that machine's clock. {@code julianday('now')} has
 * millisecond resolution and is fixed for the duration of one statement; expiries are stored as
 * Unix milliseconds. SQLite runs one writing statement at a time on a file, so each statement is
 * atomic against every other process using it.
 */
final class SqliteDialect extends Dialect {
  private static final String NOW =
      "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";
  private static final String LIVE = "expires_at > " + NOW;

  SqliteDialect() {
    // julianday('now') is this process's reading of the machine's clock, in UTC
    super(
        "SQLite",
        NOW,
        NOW + " + ?",
        NOW + " * 1000",
        "(expires_at - " + NOW + ") * 1000",
        "max(fence, ?)");
  }

  @Override
  public List<String> createTable(TableName table) {
    return List.of(
        lockTable(table, "BLOB", "TEXT", "BLOB", "INTEGER", "INTEGER", " WITHOUT ROWID"),
        incarnation(table).create());
  }

  @Override
  public String acquire(TableName table) {
    return insertInto(table, "", false)
        + NOW
        + " + ?) ON CONFLICT (key_hash) DO UPDATE SET lock_key = excluded.lock_key,"
        + " token = excluded.token, expires_at = excluded.expires_at WHERE expires_at <= "
        + NOW;
  }

  /** One statement; in {@code DO UPDATE} a bare column is the existing row's value. */
  @Override
  public String acquireFenced(TableName table) {
    return insertInto(table, "", true)
        + NOW
        + " + ?, "
        + NOW
        + " * 1000) ON CONFLICT (key_hash) DO UPDATE SET lock_key = excluded.lock_key,"
        + " token = excluded.token, expires_at = excluded.expires_at,"
        + " fence = max(fence + 1, excluded.fence) WHERE expires_at <= "
        + NOW
        + " RETURNING fence";
  }

  /**
   * With the counter column, releasing takes two statements, each atomic: this one deletes a row
   * without a counter, {@link #releaseKept} expires one with a counter (see {@link
   * LockTable#release} for why the pair is correct).
   */
  @Override
  public String release(TableName table, boolean fenceColumn) {
    return "DELETE FROM "
        + table
        + " WHERE key_hash = ? AND token = ?"
        + (fenceColumn ? " AND fence = 0" : "")
        + " RETURNING "
        + LIVE;
  }

  @Override
  public Optional<String> releaseKept(TableName table) {
    return Optional.of(expireKept(table, "X''", "0"));
  }

  @Override
  public String addFenceColumn(TableName table) {
    return "ALTER TABLE " + table + " ADD COLUMN " + FENCE_COLUMN + " INTEGER NOT NULL DEFAULT 0";
  }

  /** Milliseconds, rounded up. */
  @Override
  public long ttlUnits(Duration ttl) {
    long millis = ttl.toMillis();
    return ttl.minusMillis(millis).isZero() ? millis : millis + 1;
  }

  /**
   * Incarnation: a random identity stored in the file when first asked for, plus (on Linux) the
   * machine's boot id, since writes that were not synced are lost only when the machine restarts.
   * Uptime: since the identity was stored or the machine booted, whichever is later. Durable: a
   * file (not memory) with a journal and {@code synchronous} FULL or EXTRA, which syncs every
   * commit; NORMAL in WAL mode keeps the file consistent but may lose the last commits in a power
   * failure, so it does not count as durable (the same rule as PostgreSQL's {@code
   * synchronous_commit=off}).
   */
  @Override
  public NodeStatus status(Connection c, StatusContext context) throws SQLException {
    String file = "";
    String journal;
    int synchronous;
    String version;
    try (Statement s = c.createStatement()) {
      s.setQueryTimeout(context.timeoutSeconds());
      try (ResultSet rs = s.executeQuery("PRAGMA database_list")) {
        while (rs.next()) {
          if ("main".equals(rs.getString(2))) {
            file = rs.getString(3) == null ? "" : rs.getString(3);
          }
        }
      }
      journal = single(s, "PRAGMA journal_mode").toLowerCase(Locale.ROOT);
      synchronous = Integer.parseInt(single(s, "PRAGMA synchronous"));
      version = single(s, "SELECT sqlite_version()");
    }
    IncarnationTable.Stored stored = incarnation(context.table()).read(c, context);
    List<String> problems = new ArrayList<>();
    if (file.isEmpty()) {
      problems.add("an in-memory or temporary database");
    }
    if (journal.equals("off") || journal.equals("memory")) {
      problems.add("journal_mode=" + journal);
    }
    if (synchronous < 2) {
      problems.add("synchronous=" + (synchronous == 0 ? "OFF" : "NORMAL"));
    }
    Optional<String> boot = StatusText.bootId();
    Duration uptime = stored.age();
    Optional<Duration> machine = StatusText.machineUptime();
    if (machine.isPresent() && machine.get().compareTo(uptime) < 0) {
      uptime = machine.get();
    }
    Map<String, String> details = new LinkedHashMap<>();
    details.put("version", version);
    details.put("file", file.isEmpty() ? "(memory)" : file);
    details.put("journal_mode", journal);
    details.put("synchronous", Integer.toString(synchronous));
    details.put("boot_id", boot.orElse("unknown (not Linux)"));
    details.put("durability", durability(problems));
    return new NodeStatus(
        "sqlite-" + stored.incarnation() + boot.map(b -> "-boot-" + b).orElse(""),
        uptime,
        problems.isEmpty(),
        details);
  }

  private static String single(Statement s, String sql) throws SQLException {
    try (ResultSet rs = s.executeQuery(sql)) {
      if (!rs.next()) {
        throw new SQLException(sql + " returned nothing");
      }
      return rs.getString(1);
    }
  }

  private static IncarnationTable incarnation(TableName table) {
    String name = IncarnationTable.nameFor(table);
    return new IncarnationTable(
        name,
        "CREATE TABLE IF NOT EXISTS "
            + name
            + " (\n"
            + "  id          INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),\n"
            + "  incarnation TEXT    NOT NULL,\n"
            + "  created_at  INTEGER NOT NULL\n"
            + ")",
        "INSERT INTO "
            + name
            + " (id, incarnation, created_at) VALUES (1, ?, "
            + NOW
            + ") ON CONFLICT (id) DO NOTHING",
        "SELECT incarnation, (" + NOW + " - created_at) * 1000 FROM " + name + " WHERE id = 1");
  }
}
