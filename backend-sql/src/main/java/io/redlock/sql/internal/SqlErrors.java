package io.redlock.sql.internal;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.NodeUri;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * Turns driver exceptions into the library's transient / non-transient split, by SQLState first
 * (the standard part), then by the vendor codes and messages of the drivers that lack one. Each
 * message names the node (its password redacted) and says what to do.
 */
public final class SqlErrors {
  /** What kind of failure an exception is. */
  public enum Kind {
    CONNECTION,
    AUTHENTICATION,
    UNKNOWN_DATABASE,
    MISSING_TABLE,
    MISSING_COLUMN,
    READ_ONLY,
    TIMEOUT,
    CONTENTION,
    PRIVILEGE,
    UNIQUE_VIOLATION,
    SQL_ERROR,
    OTHER
  }

  private SqlErrors() {}

  /** Classifies an exception by everything in its cause and next-exception chain. */
  public static Kind classify(Throwable error) {
    List<SQLException> chain = sqlExceptions(error);
    // the most specific cause wins: Hikari wraps the driver's failure in a timeout
    for (Kind kind :
        List.of(
            Kind.AUTHENTICATION,
            Kind.UNKNOWN_DATABASE,
            Kind.MISSING_TABLE,
            Kind.MISSING_COLUMN,
            Kind.READ_ONLY,
            Kind.PRIVILEGE,
            Kind.UNIQUE_VIOLATION,
            Kind.TIMEOUT,
            Kind.CONTENTION,
            Kind.CONNECTION,
            Kind.SQL_ERROR)) {
      for (SQLException e : chain) {
        if (is(kind, e)) {
          return kind;
        }
      }
    }
    return Kind.OTHER;
  }

  private static boolean is(Kind kind, SQLException e) {
    String state = e.getSQLState() == null ? "" : e.getSQLState();
    int code = e.getErrorCode();
    String message = e.getMessage() == null ? "" : e.getMessage().toLowerCase(Locale.ROOT);
    return switch (kind) {
      case AUTHENTICATION ->
          state.startsWith("28") || code == 1045 || message.contains("password authentication");
      case UNKNOWN_DATABASE -> state.equals("3D000") || code == 1049 || state.equals("3F000");
      case MISSING_TABLE ->
          oneOf(state, "42P01", "42S02", "42S04")
              || oneOf(code, 1146, 42102, 42104)
              || message.contains("no such table");
      case MISSING_COLUMN ->
          oneOf(state, "42703", "42S22") || code == 1054 || message.contains("no such column");
      case READ_ONLY ->
          state.equals("25006")
              || oneOf(code, 1290, 1792, 1836, 90097)
              || containsAny(message, "[sqlite_readonly]", "read-only", "read only");
      case PRIVILEGE -> state.equals("42501") || oneOf(code, 1142, 1044, 90096);
      case UNIQUE_VIOLATION -> state.equals("23505") || code == 1062;
      case TIMEOUT ->
          e instanceof SQLTimeoutException
              || oneOf(state, "57014", "70100")
              || oneOf(code, 1969, 3024)
              || containsAny(message, "[sqlite_interrupt]", "timeout");
      case CONTENTION ->
          oneOf(state, "40001", "40P01", "55P03", "HYT00")
              || oneOf(code, 1205, 1213)
              || containsAny(message, "[sqlite_busy]", "[sqlite_locked]");
      case CONNECTION ->
          state.startsWith("08")
              || state.startsWith("57P")
              || state.equals("53300")
              // H2: connection broken, database closed, database closed at shutdown
              || oneOf(code, 90067, 90098, 90121);
      case SQL_ERROR -> state.startsWith("42") || state.startsWith("22") || state.startsWith("0A");
      default -> false;
    };
  }

  private static boolean oneOf(String state, String... states) {
    return List.of(states).contains(state);
  }

  private static boolean oneOf(int code, int... codes) {
    return IntStream.of(codes).anyMatch(c -> c == code);
  }

  private static boolean containsAny(String message, String... pieces) {
    return Stream.of(pieces).anyMatch(message::contains);
  }

  private static List<SQLException> sqlExceptions(Throwable error) {
    List<SQLException> out = new ArrayList<>();
    Throwable t = error;
    for (int depth = 0; t != null && depth < 10; depth++) {
      if (t instanceof SQLException sql) {
        out.add(sql);
        SQLException next = sql.getNextException();
        for (int n = 0; next != null && n < 5; n++) {
          out.add(next);
          next = next.getNextException();
        }
      }
      t = t.getCause() == t ? null : t.getCause();
    }
    return out;
  }

  /**
   * Whether {@link #translate} reports {@code error} as non-transient: a failure that a retry does
   * not cure (a wrong password, an unknown database, a missing table...).
   */
  public static boolean isNonTransient(Throwable error) {
    return translate("", "connecting", error, new TableName(TableName.DEFAULT), "")
        instanceof RedlockNonTransientException;
  }

  /**
   * Translates a failure of {@code operation} on {@code node}.
   *
   * @param ddl the statements that create the table, printed when it is missing
   */
  public static RedlockException translate(
      String node, String operation, Throwable error, TableName table, String ddl) {
    return forKind(
        classify(error),
        node,
        operation,
        detail(error),
        error,
        table,
        ddl,
        "the JDBC URL or DataSource");
  }

  /** Where the server of {@code node} says who may log in from where, to name in a message. */
  static String accessRules(String node) {
    String n = node == null ? "" : node.toLowerCase(Locale.ROOT);
    if (n.startsWith("jdbc:mariadb:") || n.startsWith("jdbc:mysql:")) {
      return "the account's allowed hosts, GRANTs";
    }
    if (n.startsWith("jdbc:postgresql:") || n.startsWith("postgres")) {
      return "pg_hba.conf, GRANTs";
    }
    return "the users it allows, and their GRANTs";
  }

  /**
   * The exception for a failure of {@code kind}, shared by both PostgreSQL backends so that a
   * SQLState means the same thing on either.
   *
   * @param detail the server's message and SQLState, secrets removed
   * @param ddl the statements that create the table, printed when it is missing or wrong
   * @param configuredIn where the user, password and database are configured, for messages
   */
  public static RedlockException forKind(
      Kind kind,
      String node,
      String operation,
      String detail,
      Throwable error,
      TableName table,
      String ddl,
      String configuredIn) {
    return switch (kind) {
      case AUTHENTICATION ->
          new RedlockNonTransientException(
              node,
              "authentication failed ("
                  + detail
                  + "): check the user and password in "
                  + configuredIn
                  + ", and the server's access rules ("
                  + accessRules(node)
                  + ")",
              error);
      case UNKNOWN_DATABASE ->
          new RedlockNonTransientException(
              node,
              "the database or schema does not exist ("
                  + detail
                  + "): create it, or fix the name in "
                  + configuredIn
                  + " or the table name",
              error);
      case MISSING_TABLE ->
          new RedlockNonTransientException(
              node, missingTableMessage(table, ddl) + " (" + detail + ")", error);
      case MISSING_COLUMN ->
          new RedlockNonTransientException(
              node,
              "table "
                  + table
                  + " exists but does not have the expected columns ("
                  + detail
                  + "); it must look like this:\n"
                  + ddl
                  + "\nuse another table name (redlock.table=...) or drop and recreate it",
              error);
      case READ_ONLY ->
          new RedlockNonTransientException(
              node,
              "the database is read-only ("
                  + detail
                  + "): this looks like a replica or a read-only mode; point the node at the"
                  + " primary (writable) server",
              error);
      case PRIVILEGE ->
          new RedlockNonTransientException(
              node,
              "permission denied ("
                  + detail
                  + "): grant the user SELECT, INSERT, UPDATE and DELETE on table "
                  + table
                  + " (and CREATE and ALTER if the node is to create it or add its fence column)",
              error);
      case TIMEOUT ->
          new RedlockTransientException(
              node,
              operation
                  + " timed out ("
                  + detail
                  + "): the server is slow or the row is locked; check the server's load, or"
                  + " raise redlock.queryTimeout / redlock.connectionTimeout",
              error);
      case CONTENTION ->
          new RedlockTransientException(
              node,
              operation + " met a lock conflict (" + detail + "); a retry may succeed",
              error);
      case CONNECTION ->
          new RedlockTransientException(
              node,
              "cannot connect or lost the connection ("
                  + detail
                  + "): check that the server is up and reachable at its host and port; it may"
                  + " be starting, shutting down or out of connections",
              error);
      case SQL_ERROR, UNIQUE_VIOLATION ->
          new RedlockNonTransientException(
              node,
              operation
                  + " was rejected by the database ("
                  + detail
                  + "); check that the database is one of "
                  + Dialect.SUPPORTED
                  + " and table "
                  + table
                  + " has the documented columns",
              error);
      default ->
          new RedlockTransientException(
              node, operation + " failed (" + detail + "); a retry may help", error);
    };
  }

  /** The message for a missing table the node may not create. */
  public static String missingTableMessage(TableName table, String ddl) {
    return "table "
        + table
        + " does not exist; create it with:\n"
        + ddl
        + "\nor let the node create it (URI option redlock.createTable=true, or createTable(true)"
        + " on the node's builder)";
  }

  /** The message for a fencing call on a table without the counter column. */
  public static String missingFenceMessage(TableName table, Dialect dialect) {
    return "table "
        + table
        + " has no "
        + Dialect.FENCE_COLUMN
        + " column, which fencing counters need (the table was created by an earlier version);"
        + " add it with:\n"
        + dialect.addFenceColumn(table)
        + ";\nor let the node add it (URL option redlock.createTable=true, or"
        + " JdbcLockNode.Builder.createTable(true)). Locks without fencing work without it";
  }

  /** The driver's message with any secrets removed, and its SQLState. */
  static String detail(Throwable error) {
    List<SQLException> chain = sqlExceptions(error);
    Throwable t = chain.isEmpty() ? error : chain.get(chain.size() - 1);
    for (SQLException e : chain) {
      if (e.getSQLState() != null) {
        t = e; // prefer the driver's own exception to the pool's wrapper
      }
    }
    String message = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
    String state =
        t instanceof SQLException sql && sql.getSQLState() != null
            ? "SQLState " + sql.getSQLState() + ": "
            : "";
    return state + NodeUri.redact(message.strip());
  }
}
