package io.redlock.jdbc.internal;

import io.redlock.NodeTimeoutException;
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
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * The lock table of one node: checks (or creates) the table on first use, then runs each operation
 * on a connection borrowed for that operation only, as one statement where the dialect allows it.
 * Blocking; the node calls it from its worker threads, or from the thread awaiting a reply with a
 * time budget (see {@link #boundsInlineCalls}).
 *
 * <p>A table created by an earlier version has no {@code fence} column. Plain locks keep working on
 * it; the node adds the column when it may create tables, and otherwise fencing calls fail with the
 * {@code ALTER TABLE} to run.
 */
public final class LockTable {
  /** Whether this node has taken fenced locks: then releases use the combined statement. */
  private volatile boolean fencedLocks;

  /** Serializes the one-time schema checks, which run SQL. */
  private final java.util.concurrent.locks.ReentrantLock schemaLock =
      new java.util.concurrent.locks.ReentrantLock();

  /** A live key as the server sees it. */

  /** Work done with a connection. */
  @FunctionalInterface
  private interface Work<T> {
    /**
     * @param timeout the query timeout for its statements, in seconds; 0 for none; {@link #WATCHED}
     *     for the table's query timeout, enforced by the {@link StatementWatchdog}
     */
    T run(Connection c, Dialect d, int timeout) throws SQLException;
  }

  /** A {@link Work} timeout: the query timeout, kept by the watchdog instead of the driver. */
  private static final int WATCHED = -1;

  /** Network timeouts are enforced on the socket; the executor is only a formality. */
  private static final Executor DIRECT = Runnable::run;

  private final DataSource dataSource;
  private final String node;
  private final TableName table;
  private final boolean createTable;
  private final int queryTimeoutSeconds;
  private final long queryTimeoutNanos;
  private final StatementWatchdog watchdog = StatementWatchdog.SHARED;
  private final Dialect expected;
  private volatile Dialect dialect;
  private volatile boolean fenceColumn;

  /** The lock statements' SQL for the dialect in use; see {@link #sql(Dialect)}. */
  private volatile Sql sql;

  /** Whether PostgreSQL release statements also notify the table's channel. */
  private volatile boolean notifyReleases;

  /**
   * How connections are borrowed from the built-in pool within a time limit; null for a caller's
   * DataSource (then there are no inline calls).
   */
  private volatile BoundedBorrow boundedBorrow;

  /** How long a worker waits to borrow from the built-in pool, in milliseconds. */
  private volatile long borrowMillis;

  /**
   * False after any call failed (a timeout included), true again after one succeeded: a node that
   * has just failed answers on its workers only, so that a stalled database cannot hold up the
   * engine's thread call after call.
   */
  private volatile boolean healthy = true;

  /**
   * @param dataSource where connections come from
   * @param node the node's redacted name, for messages
   * @param table the table
   * @param createTable whether a missing table may be created
   * @param queryTimeout the statement timeout (whole seconds, rounded up)
   * @param expected the dialect the URL suggests, for messages before the first connection; or
   *     {@code null}
   */
  public LockTable(
      DataSource dataSource,
      String node,
      TableName table,
      boolean createTable,
      Duration queryTimeout,
      Dialect expected) {
    this.dataSource = dataSource;
    this.node = node;
    this.table = table;
    this.createTable = createTable;
    long seconds = (queryTimeout.toMillis() + 999) / 1000;
    this.queryTimeoutSeconds = (int) Math.max(1, Math.min(Integer.MAX_VALUE, seconds));
    this.queryTimeoutNanos = TimeUnit.SECONDS.toNanos(queryTimeoutSeconds);
    this.expected = expected;
  }

  /** Conditional insert with expiry on the server's clock. */
  public AcquireResult acquire(
      String key, byte[] keyBytes, byte[] token, Duration ttl, Duration budget) {
    byte[] hash = KeyCodec.hash(keyBytes);
    return run(
        "tryAcquire",
        budget,
        (c, d, t) -> {
          try (PreparedStatement ps = prepare(c, sql(d).acquire(), t)) {
            ps.setBytes(1, hash);
            ps.setString(2, KeyCodec.display(key));
            ps.setBytes(3, token);
            ps.setLong(4, d.ttlUnits(ttl));
            int count = ps.executeUpdate();
            return AcquireResult.of(
                d.acquireStyle() == Dialect.AcquireStyle.AFFECTED_ROWS
                    ? count == 1 || count == 2
                    : count == 1);
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
   * Conditional insert with expiry that also raises the key's fencing counter, atomically with it
   * (one statement on every dialect), and returns the new counter.
   */
  public AcquireResult acquireFenced(
      String key, byte[] keyBytes, byte[] token, Duration ttl, Duration budget) {
    byte[] hash = KeyCodec.hash(keyBytes);
    fencedLocks = true;
    return run(
        "tryAcquireFenced",
        budget,
        (c, d, t) -> {
          requireFenceColumn(c, d);
          boolean returnsFence = d.fencedAcquireReturnsFence();
          try (PreparedStatement ps =
              returnsFence
                  ? prepare(c, sql(d).acquireFenced(), t)
                  : prepareWithKeys(c, sql(d).acquireFenced(), t)) {
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
            boolean acquired =
                d.acquireStyle() == Dialect.AcquireStyle.AFFECTED_ROWS
                    ? count == 1 || count == 2
                    : count == 1;
            return acquired ? AcquireResult.acquired(generatedFence(c, ps)) : AcquireResult.HELD;
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
  public boolean release(byte[] keyBytes, byte[] token, Duration budget) {
    byte[] hash = KeyCodec.hash(keyBytes);
    return run(
        "release",
        budget,
        (c, d, t) -> {
          boolean fence = fenceColumn;
          Sql s = sql(d);
          // a node that takes fenced locks releases both kinds of row in one statement, if the
          // dialect can; the others delete an unfenced row first, as cheaply as can be
          boolean combined = fence && fencedLocks && s.releaseCombined() != null;
          String statement =
              combined ? s.releaseCombined() : fence ? s.releaseFenced() : s.release();
          try (PreparedStatement ps = prepare(c, statement, t)) {
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
          try (PreparedStatement ps = prepare(c, kept, t)) {
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
  public boolean raiseFence(byte[] keyBytes, byte[] token, long atLeast, Duration budget) {
    byte[] hash = KeyCodec.hash(keyBytes);
    fencedLocks = true;
    return run(
        "raiseFence",
        budget,
        (c, d, t) -> {
          requireFenceColumn(c, d);
          try (PreparedStatement ps = prepare(c, sql(d).raiseFence(), t)) {
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
          try (PreparedStatement ps = prepare(c, recheck, t)) {
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
        null,
        (c, d, t) ->
            d.status(c, new Dialect.StatusContext(node, table, queryTimeoutSeconds, createTable)));
  }

  /**
   * The database's clock, read by one statement ({@link Dialect#serverTimeMicros}) on every call.
   */
  public java.time.Instant serverTime() {
    return run(
        "serverTime",
        null,
        (c, d, t) -> {
          try (PreparedStatement ps = prepare(c, d.serverTimeMicros(), t);
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
  public boolean extend(byte[] keyBytes, byte[] token, Duration ttl, Duration budget) {
    byte[] hash = KeyCodec.hash(keyBytes);
    return run(
        "extend",
        budget,
        (c, d, t) -> {
          try (PreparedStatement ps = prepare(c, sql(d).extend(), t)) {
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
        null,
        (c, d, t) -> {
          try (PreparedStatement ps = prepare(c, d.inspect(table), t)) {
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

  /** The dialect, once the first connection told it. */
  public Optional<Dialect> dialect() {
    return Optional.ofNullable(dialect);
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

  private PreparedStatement prepare(Connection c, String sql) throws SQLException {
    return prepare(c, sql, queryTimeoutSeconds);
  }

  /**
   * A statement with a query timeout of {@code timeout} seconds, none if 0, or the table's query
   * timeout under the watchdog if {@link #WATCHED}.
   */
  private PreparedStatement prepare(Connection c, String sql, int timeout) throws SQLException {
    return timed(c.prepareStatement(sql), timeout);
  }

  private PreparedStatement prepareWithKeys(Connection c, String sql, int timeout)
      throws SQLException {
    return timed(c.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS), timeout);
  }

  private PreparedStatement timed(PreparedStatement ps, int timeout) throws SQLException {
    if (timeout == WATCHED) {
      watchdog.watch(ps, queryTimeoutNanos);
    } else if (timeout > 0) {
      ps.setQueryTimeout(timeout);
    }
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
    lockSchema();
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
    if (columnUsable(c, d.probeFence(table))) {
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
      if (!columnUsable(c, d.probeFence(table))) {
        throw e;
      }
    }
    return columnUsable(c, d.probeFence(table));
  }

  /** False if the query fails because a column is missing. */
  private boolean columnUsable(Connection c, String probe) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.setQueryTimeout(queryTimeoutSeconds);
      s.executeQuery(probe).close();
      return true;
    } catch (SQLException e) {
      if (SqlErrors.classify(e) == SqlErrors.Kind.MISSING_COLUMN) {
        return false;
      }
      throw e;
    }
  }

  /**
   * Whether the thread awaiting a reply may run this table's statements itself: once the database
   * is known and its driver bounds a statement by a network timeout (see {@link
   * Dialect#boundsStatementsByNetworkTimeout}).
   */
  public boolean boundsInlineCalls() {
    Dialect d = dialect;
    return healthy && boundedBorrow != null && d != null && d.boundsStatementsByNetworkTimeout();
  }

  /**
   * Makes PostgreSQL release statements notify the table's channel (see {@link
   * PgReleaseNotifications}); call before first use.
   */
  public void notifyReleases() {
    this.notifyReleases = true;
  }

  /** Borrows a connection from a pool, waiting at most the given milliseconds. */
  @FunctionalInterface
  public interface BoundedBorrow {
    /** A connection, or an exception once {@code millis} have passed without one. */
    Connection borrow(long millis) throws SQLException;
  }

  /**
   * Borrows connections through {@code borrow} instead of the DataSource: on the node's workers
   * within {@code connectionTimeout}, and on the thread awaiting a reply (which this allows) within
   * its remaining wait. Without it (a caller's DataSource, whose borrowing cannot be bounded) every
   * call runs on the node's workers.
   */
  public void usePool(BoundedBorrow borrow, Duration connectionTimeout) {
    this.borrowMillis = Math.max(1, connectionTimeout.toMillis());
    this.boundedBorrow = borrow;
  }

  /**
   * Runs one operation on a borrowed connection.
   *
   * @param budget null on a worker thread; else the time left to the thread awaiting the reply,
   *     which bounds every read from the database (network timeout) and is reported as a {@link
   *     NodeTimeoutException} when it runs out
   */
  private <T> T run(String operation, Duration budget, Work<T> work) {
    if (budget != null) {
      CallDeadline.enter(budget); // for the pool's validation of the borrowed connection, too
    }
    try {
      Dialect d = ready(budget);
      int timeout = budget == null ? queryTimeout(d) : inlineQueryTimeout(d, budget);
      T result;
      try {
        result =
            budget == null
                ? withConnection(c -> work.run(c, d, timeout))
                : inline(budget, c -> work.run(c, d, timeout));
      } finally {
        if (timeout == WATCHED) {
          watchdog.done();
        }
      }
      if (!healthy) {
        healthy = true;
      }
      return result;
    } catch (RuntimeException e) {
      healthy = false;
      throw e;
    } catch (SQLException e) {
      healthy = false;
      if (budget != null && SqlErrors.isReadTimeout(e)) {
        // the connection is broken now (the pool evicts it); whether the statement took effect is
        // unknown, as with any timed-out call; the engine's release of a failed attempt, or of the
        // lease, deletes the key if it was set, else it expires with its TTL
        throw new NodeTimeoutException(node, budget);
      }
      SqlErrors.Kind kind = SqlErrors.classify(e);
      if (kind == SqlErrors.Kind.MISSING_TABLE || kind == SqlErrors.Kind.MISSING_COLUMN) {
        dialect = null; // changed behind our back: check (and maybe create) again next time
      }
      throw translate(operation, e);
    } finally {
      if (budget != null) {
        CallDeadline.exit();
      }
    }
  }

  /**
   * The query timeout of a lock statement. Where the driver would keep it with a timer task per
   * statement (pgjdbc), the {@link StatementWatchdog} keeps it instead: pgjdbc's timer thread woke
   * once per statement, even for the statements that ended in time.
   */
  private int queryTimeout(Dialect d) {
    return d.queryTimeoutIsClientTimer() ? WATCHED : queryTimeoutSeconds;
  }

  /**
   * The query timeout of an inline call's statements. The network timeout (the budget) bounds an
   * inline call; a client-side query timeout that would fire later can never fire, since the
   * network timeout breaks the connection first, so it is left out.
   */
  private int inlineQueryTimeout(Dialect d, Duration budget) {
    return d.queryTimeoutIsClientTimer() && budget.toMillis() < queryTimeoutSeconds * 1000L
        ? 0
        : queryTimeout(d);
  }

  @FunctionalInterface
  private interface ConnectionWork<T> {
    T run(Connection c) throws SQLException;
  }

  /**
   * Runs work on the awaiting thread within its {@link CallDeadline}: the borrow waits at most
   * until then (the validation of a connection that sat idle included: see {@link
   * PoolConnections}), and every read of the statement at most what is left of it.
   */
  private <T> T inline(Duration budget, ConnectionWork<T> work) throws SQLException {
    Connection borrowed;
    try {
      borrowed = boundedBorrow.borrow(ceilMillis(CallDeadline.nanosLeft()));
    } catch (SQLTransientConnectionException e) {
      throw new NodeTimeoutException(node, budget); // no connection in time
    }
    try (Connection c = borrowed) {
      long left = CallDeadline.nanosLeft();
      if (left <= 0) {
        throw new NodeTimeoutException(node, budget);
      }
      return bounded(c, left, work);
    }
  }

  private static long ceilMillis(long nanos) {
    return Math.max(1, (nanos + 999_999) / 1_000_000);
  }

  /** Borrows a connection for one unit of work, in auto-commit mode, and returns it at once. */
  private <T> T withConnection(ConnectionWork<T> work) throws SQLException {
    BoundedBorrow pool = boundedBorrow;
    try (Connection c = pool != null ? pool.borrow(borrowMillis) : dataSource.getConnection()) {
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

  /** Runs work with the connection's network timeout set to the budget, then restores it. */
  private static <T> T bounded(Connection c, long budgetNanos, ConnectionWork<T> work)
      throws SQLException {
    long millis = ceilMillis(budgetNanos);
    int before = c.getNetworkTimeout();
    c.setNetworkTimeout(DIRECT, (int) Math.min(Integer.MAX_VALUE, millis));
    try {
      return work.run(c);
    } finally {
      try {
        c.setNetworkTimeout(DIRECT, before);
      } catch (SQLException e) {
        // the timeout broke the connection: nothing to restore, the pool drops it
      }
    }
  }

  private RedlockException translate(String operation, Throwable e) {
    return SqlErrors.translate(node, operation, e, table, ddl());
  }

  /**
   * The dialect, after checking the table once (and creating it if allowed). On the awaiting thread
   * ({@code budget} not null: a table that changed behind the node's back since the call was let
   * run there) the check keeps to the call's deadline too.
   */
  private Dialect ready(Duration budget) {
    Dialect d = dialect;
    if (d != null) {
      return d;
    }
    lockSchema();
    try {
      if (dialect == null) {
        try {
          dialect =
              budget == null
                  ? withConnection(this::prepareSchema)
                  : inline(budget, this::prepareSchema);
        } catch (SQLException e) {
          if (budget != null && SqlErrors.isReadTimeout(e)) {
            throw new NodeTimeoutException(node, budget);
          }
          throw translate("connecting", e);
        }
      }
      return dialect;
    } finally {
      schemaLock.unlock();
    }
  }

  /**
   * Takes the lock of the schema checks, which run SQL while they hold it (not a monitor: a virtual
   * thread waiting here must not pin its carrier); on a thread with a {@link CallDeadline}, only
   * until then.
   */
  private void lockSchema() {
    if (!CallDeadline.active()) {
      schemaLock.lock();
      return;
    }
    boolean locked = false;
    try {
      locked = schemaLock.tryLock(Math.max(0, CallDeadline.nanosLeft()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (!locked) {
      throw new NodeTimeoutException(node, CallDeadline.budget());
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
    if (!tableUsable(c, d)) {
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
          if (!tableUsable(c, d)) {
            throw e;
          }
        }
      }
      if (!tableUsable(c, d)) {
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

  /** False if the table is missing; throws if it exists with other columns or cannot be read. */
  private boolean tableUsable(Connection c, Dialect d) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.setQueryTimeout(queryTimeoutSeconds);
      s.executeQuery(d.probe(table)).close();
      return true;
    } catch (SQLException e) {
      if (SqlErrors.classify(e) == SqlErrors.Kind.MISSING_TABLE) {
        return false;
      }
      throw e;
    }
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
