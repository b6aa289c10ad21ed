package io.redlock.jdbc;

import io.redlock.RedlockTransientException;
import io.redlock.StaleFencingTokenException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The protected resource's side of fencing when the protected data is a row of the application's
 * own SQL table: an {@code UPDATE} that carries a lease's {@link io.redlock.Lease#fencingToken()
 * fencing token} and applies only if that token is at least the highest the row has accepted, with
 * check and write in the same statement, so the database decides atomically:
 *
 * <pre>{@code
 * UPDATE invoice SET amount = ?, status = ?, fence = ? WHERE id = ? AND COALESCE(fence, 0) <= ?
 * }</pre>
 *
 * <p>The table needs one column for the highest token accepted (PostgreSQL, MariaDB/MySQL, SQLite,
 * H2 alike; {@link #addFenceColumnSql()} prints it for the table):
 *
 * <pre>{@code
 * ALTER TABLE invoice ADD COLUMN fence BIGINT NOT NULL DEFAULT 0;
 * }</pre>
 *
 * <p>Build one per statement shape, share it, and run it with the lease's token:
 *
 * <pre>{@code
 * static final JdbcFencedUpdate SET_AMOUNT =
 *     JdbcFencedUpdate.table("invoice").idColumn("id").set("amount", "status").build();
 *
 * try (Lease lease = redlock.acquire("invoice-42", ttl, maxWait)) {
 *   boolean found = SET_AMOUNT.execute(connection, 42, lease.fencingToken(), amount, "paid");
 *   // StaleFencingTokenException: a newer lease wrote the row; stop
 * }
 * }</pre>
 *
 * <p>Outcomes: {@code true} when the row was updated; {@code false} when no row has that id
 * (nothing is inserted: insert rows beforehand, with the fence at its default 0, or upsert them
 * yourself); {@link StaleFencingTokenException} when the row exists but accepted a higher token
 * (its {@link StaleFencingTokenException#resource() resource} reads {@code invoice(id=42)}). A
 * token equal to the row's fence is accepted again, so one lease may write many times, as with
 * {@link io.redlock.FencingGuard}. A {@code NULL} fence counts as 0 (never fenced).
 *
 * <p>Names (table, optionally {@code schema.table}, and columns) must be plain identifiers:
 * letters, digits and underscores, not starting with a digit, at most 63 characters. They are then
 * folded as the database folds unquoted names (lower case on PostgreSQL, upper case on H2) and
 * quoted, so they mean what they would mean unquoted, and reserved words such as {@code order}
 * work. Values and ids are always bound as parameters. The id column should be the primary key or
 * unique.
 *
 * <p>Immutable and thread-safe. Throws {@link SQLException} as the driver reports it (the statement
 * runs in the caller's transaction, whose handling stays the caller's); when the fence column is
 * missing, the message adds the {@code ALTER TABLE} to run. Nothing is logged.
 */
public final class JdbcFencedUpdate {
  private static final String IDENTIFIER = "[A-Za-z_][A-Za-z0-9_]{0,62}";
  private static final Pattern COLUMN = Pattern.compile(IDENTIFIER);
  private static final Pattern TABLE = Pattern.compile(IDENTIFIER + "(\\." + IDENTIFIER + ")?");

  /** The default name of the fence column. */
  public static final String DEFAULT_FENCE_COLUMN = "fence";

  /** The default name of the id column. */
  public static final String DEFAULT_ID_COLUMN = "id";

  /**
   * Attempts when the row changes between the {@code UPDATE} and the read that explains its 0 rows
   * (inserted, or its fence lowered, by someone else): rare, so a few are plenty.
   */
  private static final int ATTEMPTS = 3;

  private final String table;
  private final String idColumn;
  private final String fenceColumn;
  private final List<String> columns;

  private JdbcFencedUpdate(Builder b) {
    this.table = b.table;
    this.idColumn = b.idColumn;
    this.fenceColumn = b.fenceColumn;
    this.columns = List.copyOf(b.columns);
  }

  /**
   * Starts a fenced {@code UPDATE} of {@code table} (a plain identifier, optionally {@code
   * schema.table}).
   *
   * @throws IllegalArgumentException if the name is null, empty or not a plain identifier
   */
  public static Builder table(String table) {
    return new Builder(table);
  }

  /**
   * Updates the row whose id column equals {@code id}: sets the columns named by {@link
   * Builder#set} to {@code values} (in that order) and the fence column to {@code token}, if {@code
   * token} is at least the row's fence. Runs in {@code connection}'s current transaction (or
   * auto-commits, as the connection is set); when the row is not updated, it is read with {@code
   * SELECT ... FOR UPDATE} (SQLite: a plain read) to tell a stale token from a missing row.
   *
   * @return true if the row was updated; false if no row has this id (nothing was written)
   * @throws StaleFencingTokenException if the row's fence is higher than {@code token}: a newer
   *     lease wrote it; nothing was written
   * @throws IllegalArgumentException for a null id, a token that is not positive, or a number of
   *     values other than the number of columns to set
   * @throws SQLException as the driver reports it
   */
  public boolean execute(Connection connection, Object id, long token, Object... values)
      throws SQLException {
    Objects.requireNonNull(connection, "connection must not be null");
    requireArguments(id, token, values);
    Sql sql = sql(connection.getMetaData());
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
      if (update(connection, sql, id, token, values) > 0) {
        return true;
      }
      Long fence = currentFence(connection, sql, id);
      if (fence == null) {
        return false;
      }
      if (fence > token) {
        throw new StaleFencingTokenException(resource(id), token, fence);
      }
      if (fence == token && attempt > 1) {
        // Updated, but reported as 0 rows: MariaDB/MySQL with useAffectedRows=true count only
        // rows whose values changed, and this write stored the values the row already had.
        return true;
      }
      // Otherwise the row was inserted or its fence lowered since the UPDATE: run it again.
    }
    throw new RedlockTransientException(
        null,
        "the fenced UPDATE of "
            + resource(id)
            + " matched no row "
            + ATTEMPTS
            + " times although the row exists with a fence at most the token: the row keeps"
            + " changing between statements; run it in a transaction, or retry",
        null);
  }

  /**
   * As {@link #execute(Connection, Object, long, Object...)}, on a connection of {@code
   * dataSource}, in a transaction of its own (committed if the connection does not auto-commit).
   */
  public boolean execute(DataSource dataSource, Object id, long token, Object... values)
      throws SQLException {
    Objects.requireNonNull(dataSource, "dataSource must not be null");
    requireArguments(id, token, values);
    try (Connection connection = dataSource.getConnection()) {
      if (connection.getAutoCommit()) {
        return execute(connection, id, token, values);
      }
      try {
        boolean updated = execute(connection, id, token, values);
        connection.commit();
        return updated;
      } catch (SQLException | RuntimeException e) {
        try {
          connection.rollback();
        } catch (SQLException rollback) {
          e.addSuppressed(rollback);
        }
        throw e;
      }
    }
  }

  /**
   * The statement that adds the fence column to the table, as the names were given: {@code ALTER
   * TABLE invoice ADD COLUMN fence BIGINT NOT NULL DEFAULT 0} (valid on PostgreSQL, MariaDB/MySQL,
   * SQLite and H2).
   */
  public String addFenceColumnSql() {
    return "ALTER TABLE " + table + " ADD COLUMN " + fenceColumn + " BIGINT NOT NULL DEFAULT 0";
  }

  /**
   * The {@code UPDATE} as it runs on {@code connection}'s database, names folded and quoted, e.g.
   * {@code UPDATE "invoice" SET "amount" = ?, "fence" = ? WHERE "id" = ? AND COALESCE("fence", 0)
   * <= ?}: values first, then the token, the id and the token again.
   */
  public String updateSql(Connection connection) throws SQLException {
    return sql(connection.getMetaData()).update;
  }

  private int update(Connection connection, Sql sql, Object id, long token, Object[] values)
      throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(sql.update)) {
      int i = 1;
      for (Object value : values) {
        bind(ps, i++, value);
      }
      ps.setLong(i++, token);
      bind(ps, i++, id);
      ps.setLong(i, token);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw withHint(e);
    }
  }

  /** The row's fence (0 if NULL), or null if there is no row. */
  private Long currentFence(Connection connection, Sql sql, Object id) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(sql.select)) {
      bind(ps, 1, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : null;
      }
    }
  }

  private static void bind(PreparedStatement ps, int index, Object value) throws SQLException {
    if (value == null) {
      ps.setNull(index, Types.NULL);
    } else {
      ps.setObject(index, value);
    }
  }

  /** Adds the ALTER TABLE to a driver's "no such column" error about the fence column. */
  private SQLException withHint(SQLException e) {
    String message = String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT);
    boolean aboutColumn = message.contains("column") || message.contains("field");
    if (!aboutColumn || !message.contains(fenceColumn.toLowerCase(Locale.ROOT))) {
      return e;
    }
    SQLException hinted =
        new SQLException(
            e.getMessage()
                + " (if "
                + table
                + " has no fence column yet, add it: "
                + addFenceColumnSql()
                + ")",
            e.getSQLState(),
            e.getErrorCode(),
            e);
    return hinted;
  }

  /** Both statements for one database: names folded as it folds unquoted ones, then quoted. */
  private Sql sql(DatabaseMetaData meta) throws SQLException {
    String product = String.valueOf(meta.getDatabaseProductName()).toLowerCase(Locale.ROOT);
    String quote = meta.getIdentifierQuoteString();
    Names n = new Names(meta, quote == null || quote.isBlank() ? "" : quote.strip());
    String fence = n.name(fenceColumn);
    String id = n.name(idColumn);
    StringBuilder update = new StringBuilder("UPDATE ").append(n.table(table)).append(" SET ");
    for (String column : columns) {
      update.append(n.name(column)).append(" = ?, ");
    }
    update.append(fence).append(" = ? WHERE ").append(id).append(" = ? AND COALESCE(");
    update.append(fence).append(", 0) <= ?");
    String select =
        "SELECT COALESCE("
            + fence
            + ", 0) FROM "
            + n.table(table)
            + " WHERE "
            + id
            + " = ?"
            // SQLite has no FOR UPDATE (and a single writer at a time anyway)
            + (product.contains("sqlite") ? "" : " FOR UPDATE");
    return new Sql(update.toString(), select);
  }

  private record Sql(String update, String select) {}

  /** Folds and quotes validated identifiers for one database. */
  private static final class Names {
    private final String quote;
    private final boolean upper;
    private final boolean lower;

    Names(DatabaseMetaData meta, String quote) throws SQLException {
      this.quote = quote;
      this.upper = meta.storesUpperCaseIdentifiers();
      this.lower = !upper && meta.storesLowerCaseIdentifiers();
    }

    String name(String identifier) {
      String folded =
          upper
              ? identifier.toUpperCase(Locale.ROOT)
              : lower ? identifier.toLowerCase(Locale.ROOT) : identifier;
      return quote + folded + quote;
    }

    String table(String qualified) {
      int dot = qualified.indexOf('.');
      return dot < 0
          ? name(qualified)
          : name(qualified.substring(0, dot)) + "." + name(qualified.substring(dot + 1));
    }
  }

  private String resource(Object id) {
    return table + "(" + idColumn + "=" + id + ")";
  }

  private void requireArguments(Object id, long token, Object[] values) {
    if (id == null) {
      throw new IllegalArgumentException("id must not be null");
    }
    if (token <= 0) {
      throw new IllegalArgumentException(
          "a fencing token is positive, got " + token + "; pass lease.fencingToken()");
    }
    int given = values == null ? 0 : values.length;
    if (given != columns.size()) {
      throw new IllegalArgumentException(
          "expected "
              + columns.size()
              + " value(s), one for each of "
              + columns
              + ", got "
              + given
              + " (pass null, not an empty list, to store NULL)");
    }
  }

  @Override
  public String toString() {
    return "JdbcFencedUpdate[" + updateText() + "]";
  }

  private String updateText() {
    return "UPDATE "
        + table
        + " SET "
        + String.join(" = ?, ", columns)
        + " = ?, "
        + fenceColumn
        + " = ? WHERE "
        + idColumn
        + " = ? AND "
        + fenceColumn
        + " <= ?";
  }

  /** Names the columns of a {@link JdbcFencedUpdate}. Not thread-safe. */
  public static final class Builder {
    private final String table;
    private String idColumn = DEFAULT_ID_COLUMN;
    private String fenceColumn = DEFAULT_FENCE_COLUMN;
    private final LinkedHashSet<String> columns = new LinkedHashSet<>();

    private Builder(String table) {
      if (table == null || !TABLE.matcher(table).matches()) {
        throw new IllegalArgumentException(
            "invalid table name "
                + describe(table)
                + ": use letters, digits and underscores, not starting with a digit, at most 63"
                + " characters, optionally qualified by a schema as schema.table");
      }
      this.table = table;
    }

    /** The column that identifies the row, default {@value JdbcFencedUpdate#DEFAULT_ID_COLUMN}. */
    public Builder idColumn(String column) {
      this.idColumn = column("id column", column);
      return this;
    }

    /**
     * The {@code BIGINT NOT NULL DEFAULT 0} column that keeps the highest token accepted, default
     * {@value JdbcFencedUpdate#DEFAULT_FENCE_COLUMN}.
     */
    public Builder fenceColumn(String column) {
      this.fenceColumn = column("fence column", column);
      return this;
    }

    /**
     * The columns to set, in the order their values are passed to {@code execute}; may be called
     * again to add more.
     */
    public Builder set(String... columns) {
      if (columns == null || columns.length == 0) {
        throw new IllegalArgumentException("set(...) needs at least one column name");
      }
      for (String c : columns) {
        if (!this.columns.add(column("column to set", c))) {
          throw new IllegalArgumentException("column '" + c + "' is set twice");
        }
      }
      return this;
    }

    /**
     * The fenced update.
     *
     * @throws IllegalArgumentException if no column is set, or the id or fence column is also set
     *     as a value
     */
    public JdbcFencedUpdate build() {
      if (columns.isEmpty()) {
        throw new IllegalArgumentException(
            "name the columns to update with set(...), e.g. set(\"amount\", \"status\")");
      }
      List<String> clashes = new ArrayList<>();
      for (String c : columns) {
        if (c.equalsIgnoreCase(idColumn) || c.equalsIgnoreCase(fenceColumn)) {
          clashes.add(c);
        }
      }
      if (!clashes.isEmpty()) {
        throw new IllegalArgumentException(
            "set(...) must not name the id column '"
                + idColumn
                + "' or the fence column '"
                + fenceColumn
                + "' (the update sets the fence itself), got "
                + clashes);
      }
      if (idColumn.equalsIgnoreCase(fenceColumn)) {
        throw new IllegalArgumentException(
            "the id column and the fence column must differ, both are '" + idColumn + "'");
      }
      return new JdbcFencedUpdate(this);
    }

    private static String column(String role, String name) {
      if (name == null || !COLUMN.matcher(name).matches()) {
        throw new IllegalArgumentException(
            "invalid "
                + role
                + " name "
                + describe(name)
                + ": use letters, digits and underscores, not starting with a digit, at most 63"
                + " characters");
      }
      return name;
    }

    private static String describe(String name) {
      return name == null ? "null" : "'" + name + "'";
    }
  }
}
