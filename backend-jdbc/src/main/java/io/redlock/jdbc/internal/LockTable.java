package io.redlock.jdbc.internal;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.NodeStatus;
import io.redlock.sql.internal.Dialect;
import io.redlock.sql.internal.KeyCodec;
import io.redlock.sql.internal.PostgresDialect;
import io.redlock.sql.internal.SqlErrors;
import io.redlock.sql.internal.TableName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The lock table of one node: checks (or creates) the table on first use, then runs each operation
 * on a connection borrowed for that operation only, as one statement where the dialect allows it,
 * under the driver's own query timeout. Blocking; the node calls it from its executor.
 *
 * <p>A table created by an earlier version has no {@code fence} column. Plain locks keep working on
 * it; the node adds the column when it may create tables, and otherwise fencing calls fail with the
 * {@code ALTER TABLE} to run.
 */
public final class LockTable {
  /** Where connections come from: the built-in pool, or the caller's DataSource. */
  @FunctionalInterface
  public interface Connections {
    /** A connection, which the caller closes. */
    Connection borrow() throws SQLException;
  }

  /** Work done with a connection. */
  @FunctionalInterface
  private interface Work<T> {
    T run(Connection c, Dialect d) throws SQLException;
  }

  /** Serializes the one-time schema checks, which run SQL (not a monitor: see virtual threads). */
  private final ReentrantLock schemaLock = new ReentrantLock();

  private final Connections connections;
  private final String node;
  private final TableName table;
  private final boolean createTable;
  private final int queryTimeoutSeconds;
  private final Dialect expected;
  private volatile Dialect dialect;
  private volatile boolean fenceColumn;

  /** Whether this node has taken fenced locks: then releases use the combined statement. */
  private volatile boolean fencedLocks;

  /** The lock statements' SQL for the dialect in use; see {@link #sql(Dialect)}. */
  private volatile Sql sql;

  /** Whether PostgreSQL release statements also notify the table's channel. */
  private volatile boolean notifyReleases;

  /**
   * @param connections where connections come from
   * @param node the node's redacted name, for messages
   * @param table the table
   * @param createTable whether a missing table may be created
   * @param queryTimeout the statement timeout (whole seconds, rounded up)
   * @param expected the dialect the URL suggests, for messages before the first connection; or
   *     {@code null}
   */
  public LockTable(
      Connections connections,
      String node,
      TableName table,
      boolean createTable,
      Duration queryTimeout,
      Dialect expected) {
    this.connections = connections;
    this.node = node;
    this.table = table;
    this.createTable = createTable;
    long seconds = (queryTimeout.toMillis() + 999) / 1000;
    this.queryTimeoutSeconds = (int) Math.max(1, Math.min(Integer.MAX_VALUE, seconds));
    this.expected = expected;
  }

  /**
   * Conditional insert with expiry on the server's clock; {@code fenced}, it also raises the key's
   * fencing counter, atomically with it (one statement on every dialect), and returns the new one.
   */
  public AcquireResult acquire(
      String key, byte[] keyBytes, byte[] token, Duration ttl, boolean fenced) {
    byte[] hash = KeyCodec.hash(keyBytes);
    if (fenced) {
      fencedLocks = true;
    }
    return run(
        fenced ? "tryAcquireFenced" : "tryAcquire",
        (c, d) -> {
          if (fenced) {
            requireFenceColumn(c, d);
          }
          boolean returnsFence = fenced && d.fencedAcquireReturnsFence();
          String statement = fenced ? sql(d).acquireFenced() : sql(d).acquire();
          try (PreparedStatement ps = prepare(c, statement, fenced && !returnsFence)) {
            ps.setBytes(1, hash);
            ps.setString(2, KeyCodec.display(key));
            ps.setBytes(3, token);
            ps.setLong(4, d.ttlUnits(ttl));
            if (returnsFence) {
              try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? AcquireResult.acquired(rs.getLong(1)) : AcquireResult.HELD;
              }
            }
            int count = ps.executeUpdate();
            if (count != 1
                && (count != 2 || d.acquireStyle() != Dialect.AcquireStyle.AFFECTED_ROWS)) {
              return AcquireResult.HELD;
            }
            return fenced ? AcquireResult.acquired(generatedFence(c, ps)) : AcquireResult.of(true);
          } catch (SQLException e) {
            if (d.uniqueViolationMeansHeld()
                && SqlErrors.classify(e) == SqlErrors.Kind.UNIQUE_VIOLATION) {
              return AcquireResult.HELD; // lost a race to insert the absent key
            }
            throw e;
          }
        });
  }

  /**
   * The counter of a MySQL-protocol fenced acquisition: the statement's {@code LAST_INSERT_ID},
   * which drivers return as its generated key; else asked for on the same connection, where it
   * stays until the next statement.
   */
  private static long generatedFence(Connection c, PreparedStatement ps) throws SQLException {
    try (ResultSet keys = ps.getGeneratedKeys()) {
      if (keys.next()) {
        return keys.getLong(1);
      }
    }
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT LAST_INSERT_ID()")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Compare-and-delete: true if the key held this token and had not expired. A row with a fencing
   * counter is kept, expired and without a token, so that the counter outlives the lock; a row
   * without one is deleted.
   *
   * <p>Where the dialect needs two statements (the first deletes the caller's row if its counter is
   * 0, the second expires the caller's live row if its counter is not 0), each is atomic and
   * re-reads the row it changes, and the pair is still correct: a counter never returns to 0 (only
   * rows at 0 are deleted) and a token is never reused, so if the first finds nothing because the
   * counter is set, the second finds the same row with the same token, unless it expired in
   * between, when false is the right answer anyway.
   */
  public boolean release(byte[] keyBytes, byte[] token) {
    byte[] hash = KeyCodec.hash(keyBytes);
    return run(
        "release",
        (c, d) -> {
          boolean fence = fenceColumn;
          Sql s = sql(d);
          // a node that takes fenced locks releases both kinds of row in one statement, if the
          // dialect can; the others delete an unfenced row first, as cheaply as can be
          boolean combined = fence && fencedLocks && s.releaseCombined() != null;
          String statement =
              combined ? s.releaseCombined() : fence ? s.releaseFenced() : s.release();
          try (PreparedStatement ps = prepare(c, statement)) {
            ps.setBytes(1, hash);
            ps.setBytes(2, token);
            if (!d.releaseReturnsLiveness(fence)) {
              if (ps.executeUpdate() == 1) {
                return true;
              }
            } else {
              try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                  return rs.getBoolean(1);
                }
              }
            }
          }
          String kept = s.releaseKept();
          if (!fence || combined || kept == null) {
            return false;
          }
          try (PreparedStatement ps = prepare(c, kept)) {
            ps.setBytes(1, hash);
            ps.setBytes(2, token);
            return ps.executeUpdate() == 1;
          }
        });
  }

  /**
   * If the key is live and holds the token, raises its fencing counter to at least {@code atLeast}:
   * true if it did (or the counter was already that high).
   */
  public boolean raiseFence(byte[] keyBytes, byte[] token, long atLeast) {
    byte[] hash = KeyCodec.hash(keyBytes);
    fencedLocks = true;
    return run(
        "raiseFence",
        (c, d) -> {
          requireFenceColumn(c, d);
          try (PreparedStatement ps = prepare(c, sql(d).raiseFence())) {
            ps.setLong(1, atLeast);
            ps.setBytes(2, hash);
            ps.setBytes(3, token);
            if (ps.executeUpdate() == 1) {
              return true;
            }
          }
          String recheck = sql(d).raiseFenceRecheck();
          if (recheck == null) {
            return false;
          }
          try (PreparedStatement ps = prepare(c, recheck)) {
            ps.setBytes(1, hash);
            ps.setBytes(2, token);
            ps.setLong(3, atLeast);
            try (ResultSet rs = ps.executeQuery()) {
              return rs.next();
            }
          }
        });
  }

  /** The database's incarnation, uptime and durability. */
  public NodeStatus status() {
    return run(
        "status",
        (c, d) ->
            d.status(c, new Dialect.StatusContext(node, table, queryTimeoutSeconds, createTable)));
  }

  /**
   * The database's clock, read by one statement ({@link Dialect#serverTimeMicros}) on every call.
   */
  public java.time.Instant serverTime() {
    return run(
        "serverTime",
        (c, d) -> {
          try (PreparedStatement ps = prepare(c, d.serverTimeMicros());
              ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) {
              throw new SQLException("the clock query returned no row: " + d.serverTimeMicros());
            }
            long micros = rs.getLong(1);
            return java.time.Instant.ofEpochSecond(
                Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
          }
        });
  }

  /** Compare-and-extend: true if the key held this token, had not expired, and was moved. */
  public boolean extend(byte[] keyBytes, byte[] token, Duration ttl) {
    byte[] hash = KeyCodec.hash(keyBytes);
    return run(
        "extend",
        (c, d) -> {
          try (PreparedStatement ps = prepare(c, sql(d).extend())) {
            ps.setLong(1, d.ttlUnits(ttl));
            ps.setBytes(2, hash);
            ps.setBytes(3, token);
            return ps.executeUpdate() == 1;
          }
        });
  }

  /** Reads a live key on the server: its token and remaining time (expired rows are free). */
  public Optional<KeyHolder> inspect(String key) {
    byte[] hash = KeyCodec.hash(KeyCodec.encode(key));
    return run(
        "inspect",
        (c, d) -> {
          try (PreparedStatement ps = prepare(c, d.inspect(table))) {
            ps.setBytes(1, hash);
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                return Optional.empty();
              }
              return Optional.of(
                  new KeyHolder(
                      KeyCodec.decode(rs.getBytes(1)),
                      Duration.ofNanos(Math.max(0, rs.getLong(2)) * 1_000)));
            }
          }
        });
  }

  /** The DDL for this table in the database's dialect (as far as known). */
  public String ddl() {
    Dialect d = dialect != null ? dialect : expected;
    if (d == null) {
      StringBuilder sb = new StringBuilder();
      for (String name : Dialect.SUPPORTED) {
        sb.append("-- ")
            .append(name)
            .append(":\n")
            .append(dialectFor(name).ddlText(table))
            .append('\n');
      }
      return sb.toString().strip();
    }
    return d.ddlText(table);
  }

  /**
   * The text of every statement a lock call runs, built once per dialect: building it per call cost
   * a concatenation, and the driver's statement cache then hashed the new string.
   */
  private record Sql(
      Dialect dialect,
      String acquire,
      String acquireFenced,
      String release,
      String releaseFenced,
      String releaseKept,
      String releaseCombined,
      String extend,
      String raiseFence,
      String raiseFenceRecheck) {
    static Sql of(Dialect d, TableName table) {
      return new Sql(
          d,
          d.acquire(table),
          d.acquireFenced(table),
          d.release(table, false),
          d.release(table, true),
          d.releaseKept(table).orElse(null),
          d.releaseCombined(table).orElse(null),
          d.extend(table),
          d.raiseFence(table),
          d.raiseFenceRecheck(table).orElse(null));
    }
  }

  private Sql sql(Dialect d) {
    Sql s = sql;
    if (s == null || s.dialect() != d) {
      s = Sql.of(d, table);
      sql = s;
    }
    return s;
  }

  /** A statement under the driver's own query timeout. */
  private PreparedStatement prepare(Connection c, String sql) throws SQLException {
    return prepare(c, sql, false);
  }

  private PreparedStatement prepare(Connection c, String sql, boolean generatedKeys)
      throws SQLException {
    PreparedStatement ps =
        generatedKeys
            ? c.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS)
            : c.prepareStatement(sql);
    ps.setQueryTimeout(queryTimeoutSeconds);
    return ps;
  }

  /**
   * Fails a fencing call on a table without the counter column, unless someone added it since the
   * table was checked (then it is noticed here) or the node may add it itself.
   */
  private void requireFenceColumn(Connection c, Dialect d) throws SQLException {
    if (fenceColumn) {
      return;
    }
    schemaLock.lock();
    try {
      if (!fenceColumn) {
        fenceColumn = ensureFenceColumn(c, d);
      }
    } finally {
      schemaLock.unlock();
    }
    if (!fenceColumn) {
      throw new RedlockNonTransientException(node, SqlErrors.missingFenceMessage(table, d), null);
    }
  }

  /** True if the table has the counter column, after adding it if the node may. */
  private boolean ensureFenceColumn(Connection c, Dialect d) throws SQLException {
    if (usable(c, d.probeFence(table), SqlErrors.Kind.MISSING_COLUMN)) {
      return true;
    }
    if (!createTable) {
      return false;
    }
    try (Statement s = c.createStatement()) {
      s.setQueryTimeout(queryTimeoutSeconds);
      s.execute(d.addFenceColumn(table));
    } catch (SQLException e) {
      // another client may have added it at the same moment: fine if it is there now
      if (!usable(c, d.probeFence(table), SqlErrors.Kind.MISSING_COLUMN)) {
        throw e;
      }
    }
    return usable(c, d.probeFence(table), SqlErrors.Kind.MISSING_COLUMN);
  }

  /** False if {@code probe} fails because {@code missing} (the table, or a column) is. */
  private boolean usable(Connection c, String probe, SqlErrors.Kind missing) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.setQueryTimeout(queryTimeoutSeconds);
      s.executeQuery(probe).close();
      return true;
    } catch (SQLException e) {
      if (SqlErrors.classify(e) == missing) {
        return false;
      }
      throw e;
    }
  }

  /**
   * Makes PostgreSQL release statements notify the table's channel (see {@link
   * PgReleaseNotifications}); call before first use.
   */
  public void notifyReleases() {
    this.notifyReleases = true;
  }

  /** Runs one operation on a borrowed connection. */
  private <T> T run(String operation, Work<T> work) {
    try {
      Dialect d = ready();
      return withConnection(c -> work.run(c, d));
    } catch (SQLException e) {
      SqlErrors.Kind kind = SqlErrors.classify(e);
      if (kind == SqlErrors.Kind.MISSING_TABLE || kind == SqlErrors.Kind.MISSING_COLUMN) {
        dialect = null; // changed behind our back: check (and maybe create) again next time
      }
      throw translate(operation, e);
    }
  }

  @FunctionalInterface
  private interface ConnectionWork<T> {
    T run(Connection c) throws SQLException;
  }

  /** Borrows a connection for one unit of work, in auto-commit mode, and returns it at once. */
  private <T> T withConnection(ConnectionWork<T> work) throws SQLException {
    try (Connection c = connections.borrow()) {
      // a user's pool may hand out connections in manual-commit mode; each statement of ours is
      // its own transaction
      boolean manual = !c.getAutoCommit();
      if (manual) {
        c.setAutoCommit(true);
      }
      try {
        return work.run(c);
      } finally {
        if (manual) {
          c.setAutoCommit(false);
        }
      }
    }
  }

  private RedlockException translate(String operation, Throwable e) {
    return SqlErrors.translate(node, operation, e, table, ddl());
  }

  /** The dialect, after checking the table once (and creating it if allowed). */
  private Dialect ready() {
    Dialect d = dialect;
    if (d != null) {
      return d;
    }
    schemaLock.lock();
    try {
      if (dialect == null) {
        try {
          dialect = withConnection(this::prepareSchema);
        } catch (SQLException e) {
          throw translate("connecting", e);
        }
      }
      return dialect;
    } finally {
      schemaLock.unlock();
    }
  }

  /** The dialect of a product name from {@code DatabaseMetaData}, or {@code null}. */
  public static Dialect dialectFor(String productName) {
    String p = productName == null ? "" : productName.toLowerCase(java.util.Locale.ROOT);
    if (p.contains("postgres")) {
      return new PostgresDialect();
    }
    if (p.contains("mariadb") || p.contains("mysql")) {
      return new MariaDbDialect(!p.contains("mariadb"));
    }
    if (p.contains("sqlite")) {
      return new SqliteDialect();
    }
    return p.equals("h2") ? new H2Dialect() : null;
  }

  private Dialect prepareSchema(Connection c) throws SQLException {
    String product = c.getMetaData().getDatabaseProductName();
    Dialect d = dialectFor(product);
    if (notifyReleases && d instanceof PostgresDialect postgres) {
      d = postgres.notifyingReleases();
    }
    if (d == null) {
      throw new RedlockNonTransientException(
          node,
          "unsupported database '" + product + "': the JDBC backend supports " + Dialect.SUPPORTED,
          null);
    }
    if (!usable(c, d.probe(table), SqlErrors.Kind.MISSING_TABLE)) {
      if (!createTable) {
        throw new RedlockNonTransientException(
            node, SqlErrors.missingTableMessage(table, d.ddlText(table)), null);
      }
      for (String sql : d.createTable(table)) {
        try (Statement s = c.createStatement()) {
          s.setQueryTimeout(queryTimeoutSeconds);
          s.execute(sql);
        } catch (SQLException e) {
          // another client may have created it at the same moment (PostgreSQL reports that as a
          // unique violation on its catalog): fine if the table is there now
          if (!usable(c, d.probe(table), SqlErrors.Kind.MISSING_TABLE)) {
            throw e;
          }
        }
      }
      if (!usable(c, d.probe(table), SqlErrors.Kind.MISSING_TABLE)) {
        throw new RedlockNonTransientException(
            node, SqlErrors.missingTableMessage(table, d.ddlText(table)), null);
      }
    }
    fenceColumn = ensureFenceColumn(c, d);
    if (d instanceof MariaDbDialect mariaDb) {
      requireAffectedRows(c, mariaDb);
    }
    return d;
  }

  /**
   * MySQL-protocol drivers report "found" rows unless told to report affected rows; then a held key
   * would look acquired. Upserting an expired probe row twice tells which mode is on.
   */
  private void requireAffectedRows(Connection c, MariaDbDialect d) throws SQLException {
    // a random key of its own, so that nodes probing at once do not disturb each other
    byte[] probeKey = new byte[32];
    new java.security.SecureRandom().nextBytes(probeKey);
    int second;
    try (PreparedStatement ps = prepare(c, d.affectedRowsProbe(table))) {
      ps.setBytes(1, probeKey);
      ps.executeUpdate();
      second = ps.executeUpdate();
    }
    try (PreparedStatement ps = prepare(c, "DELETE FROM " + table + " WHERE key_hash = ?")) {
      ps.setBytes(1, probeKey);
      ps.executeUpdate();
    }
    if (second != 0) {
      throw new RedlockNonTransientException(
          node,
          "the connection reports found rows instead of affected rows, so a held key cannot be"
              + " told from an acquired one: set useAffectedRows=true on the DataSource or in the"
              + " JDBC URL",
          null);
    }
  }
}
