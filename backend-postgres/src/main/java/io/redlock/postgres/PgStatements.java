package io.redlock.postgres;

import io.redlock.sql.internal.PostgresDialect;
import io.redlock.sql.internal.TableName;

/**
 * The lock statements of {@link PostgresDialect} (shared with JDBC nodes), their {@code ?} numbered
 * as PostgreSQL's extended protocol wants ({@code $1}...), once per table shape.
 *
 * @param fenceColumn whether the table has the fencing counter column
 * @param release on a table with that column, the delete of a row without a counter; {@code
 *     releaseKept} then expires a row with one (null if {@code release} does both)
 * @param releaseCombined both in one statement, for a node that takes fenced locks
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
