package io.redlock.postgres.internal;

import io.redlock.jdbc.internal.KeyCodec;
import io.redlock.jdbc.internal.PostgresDialect;
import io.redlock.jdbc.internal.TableName;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.NodeStatus;
import io.vertx.core.buffer.Buffer;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowIterator;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * One lock operation: which of the table's statements it runs (chosen on the event loop when it is
 * written, since the table's shape is known only then), with which parameters, and how its rows
 * answer. Parameters follow {@link io.redlock.jdbc.internal.Dialect}'s order.
 *
 * @param <T> the answer's type
 */
abstract class PgOp<T> {
  private final String operation;
  private final Tuple params;

  PgOp(String operation, Tuple params) {
    this.operation = operation;
    this.params = params;
  }

  /** The operation's name for messages: {@code tryAcquire}, {@code release}... */
  final String operation() {
    return operation;
  }

  final Tuple params() {
    return params;
  }

  /** Whether the statement needs the table checked first (lock statements do). */
  boolean needsTable() {
    return true;
  }

  /** Whether the statement needs the table's fencing counter column. */
  boolean needsFence() {
    return false;
  }

  /** The statement to run, numbered for PostgreSQL ({@code $1}...). */
  abstract String sql(PgStatements statements);

  /** The answer from the statement's rows. */
  abstract T answer(RowSet<Row> rows);

  /**
   * A statement to run next on the same connection, given this one's answer, whose answer is the
   * call's; null for none (the default).
   */
  PgOp<T> followUp(T answer, PgStatements statements) {
    return null;
  }

  private static Buffer bytes(byte[] b) {
    return Buffer.buffer(b);
  }

  static PgOp<AcquireResult> acquire(byte[] hash, String display, byte[] token, long ttlMicros) {
    return new PgOp<>("tryAcquire", Tuple.of(bytes(hash), display, bytes(token), ttlMicros)) {
      @Override
      String sql(PgStatements s) {
        return s.acquire();
      }

      @Override
      AcquireResult answer(RowSet<Row> rows) {
        return AcquireResult.of(rows.rowCount() == 1);
      }
    };
  }

  static PgOp<AcquireResult> acquireFenced(
      byte[] hash, String display, byte[] token, long ttlMicros) {
    return new PgOp<>("tryAcquireFenced", Tuple.of(bytes(hash), display, bytes(token), ttlMicros)) {
      @Override
      boolean needsFence() {
        return true;
      }

      @Override
      String sql(PgStatements s) {
        return s.acquireFenced();
      }

      @Override
      AcquireResult answer(RowSet<Row> rows) {
        RowIterator<Row> it = rows.iterator();
        return it.hasNext() ? AcquireResult.acquired(it.next().getLong(0)) : AcquireResult.HELD;
      }
    };
  }

  /**
   * Compare-and-delete: the plain delete of a row without a fencing counter, then, if it found
   * nothing, the expiry of a row with one (two statements, each atomic: see the JDBC backend's
   * LockTable.release); with {@code combined} (a node that takes fenced locks) both in one.
   */
  static PgOp<Boolean> release(byte[] hash, byte[] token, boolean combined) {
    return new PgOp<>("release", Tuple.of(bytes(hash), bytes(token))) {
      @Override
      String sql(PgStatements s) {
        return combined && s.fenceColumn() ? s.releaseCombined() : s.release();
      }

      @Override
      Boolean answer(RowSet<Row> rows) {
        RowIterator<Row> it = rows.iterator();
        return it.hasNext() && Boolean.TRUE.equals(it.next().getBoolean(0));
      }

      @Override
      PgOp<Boolean> followUp(Boolean released, PgStatements s) {
        if (released || combined || !s.fenceColumn() || s.releaseKept() == null) {
          return null;
        }
        return new PgOp<>("release", params()) {
          @Override
          String sql(PgStatements statements) {
            return statements.releaseKept();
          }

          @Override
          Boolean answer(RowSet<Row> rows) {
            return rows.rowCount() == 1;
          }
        };
      }
    };
  }

  static PgOp<Boolean> extend(byte[] hash, byte[] token, long ttlMicros) {
    return new PgOp<>("extend", Tuple.of(ttlMicros, bytes(hash), bytes(token))) {
      @Override
      String sql(PgStatements s) {
        return s.extend();
      }

      @Override
      Boolean answer(RowSet<Row> rows) {
        return rows.rowCount() == 1;
      }
    };
  }

  static PgOp<Boolean> raiseFence(byte[] hash, byte[] token, long atLeast) {
    return new PgOp<>("raiseFence", Tuple.of(atLeast, bytes(hash), bytes(token))) {
      @Override
      boolean needsFence() {
        return true;
      }

      @Override
      String sql(PgStatements s) {
        return s.raiseFence();
      }

      @Override
      Boolean answer(RowSet<Row> rows) {
        return rows.rowCount() == 1;
      }
    };
  }

  static PgOp<Optional<KeyHolder>> inspect(byte[] hash) {
    return new PgOp<>("inspect", Tuple.of(bytes(hash))) {
      @Override
      String sql(PgStatements s) {
        return s.inspect();
      }

      @Override
      Optional<KeyHolder> answer(RowSet<Row> rows) {
        RowIterator<Row> it = rows.iterator();
        if (!it.hasNext()) {
          return Optional.empty();
        }
        Row row = it.next();
        long micros = Math.max(0, row.getLong(1));
        return Optional.of(
            new KeyHolder(
                KeyCodec.decode(row.getBuffer(0).getBytes()), Duration.ofNanos(micros * 1_000)));
      }
    };
  }

  static PgOp<Instant> serverTime() {
    return new PgOp<>("serverTime", Tuple.tuple()) {
      @Override
      boolean needsTable() {
        return false;
      }

      @Override
      String sql(PgStatements s) {
        return s.serverTime();
      }

      @Override
      Instant answer(RowSet<Row> rows) {
        long micros = rows.iterator().next().getLong(0);
        return Instant.ofEpochSecond(
            Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
      }
    };
  }

  static PgOp<NodeStatus> status(TableName table) {
    return new PgOp<>("status", Tuple.of(table.value())) {
      @Override
      boolean needsTable() {
        return false;
      }

      @Override
      String sql(PgStatements s) {
        return s.status();
      }

      @Override
      NodeStatus answer(RowSet<Row> rows) {
        Row r = rows.iterator().next();
        return PostgresDialect.status(
            table,
            r.getOffsetDateTime(0),
            r.getLong(1),
            r.getString(2),
            r.getString(3),
            r.getString(4),
            r.getString(5),
            r.getString(6));
      }
    };
  }
}
