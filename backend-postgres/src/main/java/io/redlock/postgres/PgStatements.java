package io.redlock.postgres;

import io.redlock.sql.internal.PostgresDialect;
import io.redlock.sql.internal.TableName;

/**
 * The text of every statement this backend runs, taken from the JDBC backend's {@link
 * PostgresDialect} (the one place where this project's PostgreSQL SQL is written, so that JDBC and
 * reactive nodes share a table), with its {@code ?} parameters numbered as PostgreSQL's extended
 * protocol wants them ({@code $1}, {@code $2}...). Built once per table shape.
 *
 * @param fenceColumn whether the table has the fencing counter column (the release statement
 *     differs)
 * @param release on a table with the counter column, the plain delete of a row without a counter
 *     (as cheap as a release can be); {@code releaseKept} then expires a row with one, unless it is
 *     null because {@code release} does both (with notifications)
 * @param releaseCombined both kinds in one statement, for a node that takes fenced locks
 */
record PgStatements(
    boolean fenceColumn,
    String acquire,
    String acquireFenced,
    String release,
    String releaseKept,
    String releaseCombined,
    String extend,
    String raiseFence,
    String serverTime,
    String status,
    String inspect) {

  static PgStatements of(PostgresDialect dialect, TableName table, boolean fenceColumn) {
    return new PgStatements(
        fenceColumn,
        numbered(dialect.acquire(table)),
        numbered(dialect.acquireFenced(table)),
        numbered(dialect.release(table, fenceColumn)),
        fenceColumn ? dialect.releaseKept(table).map(PgStatements::numbered).orElse(null) : null,
        numbered(dialect.releaseCombined(table).orElseThrow()),
        numbered(dialect.extend(table)),
        numbered(dialect.raiseFence(table)),
        numbered(dialect.serverTimeMicros()),
        numbered(PostgresDialect.statusQuery()),
        numbered(dialect.inspect(table)));
  }

  /** The statement with {@code $1, $2...} for its {@code ?} parameters (none inside literals). */
  static String numbered(String sql) {
    StringBuilder sb = new StringBuilder(sql.length() + 8);
    int n = 0;
    boolean quoted = false;
    for (int i = 0; i < sql.length(); i++) {
      char c = sql.charAt(i);
      if (c == '\'') {
        quoted = !quoted;
      }
      if (c == '?' && !quoted) {
        sb.append('$').append(++n);
      } else {
        sb.append(c);
      }
    }
    return sb.toString();
  }
}
