package io.redlock.jdbc.internal;

import io.redlock.RedlockNonTransientException;
import io.redlock.sql.internal.Dialect;
import io.redlock.sql.internal.SqlErrors;
import io.redlock.sql.internal.TableName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

/**
 * A one-row table holding a random identity for databases without a server process that could
 * report its start (SQLite, H2): the identity is created on first use and lives as long as the
 * table's contents, so it changes exactly when the stored lock state is lost.
 *
 * @param name the table's name
 * @param create the statement that creates it if missing
 * @param insert inserts the row unless present; parameter: the new identity
 * @param select returns the identity and the row's age in microseconds, on the server's clock
 */
record IncarnationTable(String name, String create, String insert, String select) {

  /** The table that goes with a lock table: its name plus {@code _incarnation}. */
  static String nameFor(TableName lockTable) {
    return lockTable.value() + "_incarnation";
  }

  /** An identity and how long ago it was created. */
  record Stored(String incarnation, Duration age) {}

  /**
   * Reads the identity, creating it (and the table, if allowed) when missing. Racing creators are
   * fine: the insert keeps the first row, and everyone reads that one.
   */
  Stored read(Connection c, Dialect.StatusContext context) throws SQLException {
    Optional<Stored> stored = select(c, context);
    if (stored.isPresent()) {
      return stored.get();
    }
    try (PreparedStatement ps = c.prepareStatement(insert)) {
      ps.setQueryTimeout(context.timeoutSeconds());
      ps.setString(1, UUID.randomUUID().toString());
      ps.executeUpdate();
    } catch (SQLException e) {
      if (SqlErrors.classify(e) != SqlErrors.Kind.UNIQUE_VIOLATION) {
        throw e; // else: another client inserted it first, which is as good
      }
    }
    return select(c, context)
        .orElseThrow(() -> new SQLException("the row of " + name + " vanished after its insert"));
  }

  private Optional<Stored> select(Connection c, Dialect.StatusContext context) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(select)) {
      ps.setQueryTimeout(context.timeoutSeconds());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        long micros = Math.max(0, rs.getLong(2));
        return Optional.of(new Stored(rs.getString(1), Duration.ofNanos(micros * 1_000)));
      }
    } catch (SQLException e) {
      if (SqlErrors.classify(e) != SqlErrors.Kind.MISSING_TABLE) {
        throw e;
      }
      if (!context.mayCreate()) {
        throw new RedlockNonTransientException(
            context.node(),
            "table "
                + name
                + ", where this node keeps the database's identity for status reports, does not"
                + " exist; create it with:\n"
                + create
                + ";\nor let the node create it (URL option redlock.createTable=true, or"
                + " JdbcLockNode.Builder.createTable(true))",
            e);
      }
      try (Statement s = c.createStatement()) {
        s.setQueryTimeout(context.timeoutSeconds());
        s.execute(create);
      }
      return Optional.empty();
    }
  }
}
