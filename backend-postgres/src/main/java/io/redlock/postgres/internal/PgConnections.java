package io.redlock.postgres.internal;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.jdbc.internal.PostgresDialect;
import io.redlock.jdbc.internal.SqlErrors;
import io.redlock.jdbc.internal.TableName;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClientOptions;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.spi.PgDriver;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.spi.ConnectionFactory;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connections of one node and the calls waiting for them, all kept on one Vert.x event loop
 * (every field below the constructor's is touched on that loop only, so nothing is locked).
 *
 * <ul>
 *   <li>A call is handed to the loop ({@link #submit}), which writes its statement at once on the
 *       connection with the fewest statements in flight, pipelining behind them, up to {@code
 *       pipeliningLimit} per connection. A call made while a connection has room counts as sent
 *       from the start (the loop's hop is part of writing it, as a socket buffer would be); where
 *       every connection is full (or none is open yet, or the table is being checked) the call
 *       waits in a queue, and a call the engine abandons meanwhile is skipped, never written. So a
 *       release is not lost because this machine was too busy to run the loop within the engine's
 *       node timeout, and a frozen server finds at most {@code poolSize × pipeliningLimit}
 *       statements to answer when it thaws.
 *   <li>Connections are opened on demand, up to {@code poolSize}: one more whenever a call finds
 *       every open one busy. A connection that breaks is dropped and its calls fail; the next call
 *       opens another. While none can be opened, calls fail at once with the last error for a short
 *       pause that doubles with each failure (25 ms to 250 ms; 1 s for errors a retry will not fix,
 *       such as a wrong password) instead of each trying again.
 *   <li>A timer bounds everything: a connection attempt ({@code connectTimeout}), a wait in the
 *       queue (the same), and a statement's answer: the server ends its own statements at {@code
 *       queryTimeout} ({@code statement_timeout}); a connection whose oldest statement has had no
 *       answer for a second longer (a frozen server, a dead path) is closed and its calls fail. A
 *       late answer within that time is read as usual, and the connection goes on serving calls.
 *   <li>The table is checked (and created or completed, if allowed) before the first lock
 *       statement, with the statements of {@link PostgresDialect}, and again after a statement
 *       found it or a column missing.
 * </ul>
 */
final class PgConnections {
  private static final Logger log = LoggerFactory.getLogger(PgConnections.class);
  private static final long GRACE_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final String name;
  private final Context context;
  private final ConnectionFactory<PgConnectOptions> factory;
  private final PgConnectOptions connectOptions;
  private final PostgresDialect dialect;
  private final TableName table;
  private final boolean createTable;
  private final int poolSize;
  private final int pipeliningLimit;
  private final long connectTimeoutNanos;
  private final long answerTimeoutNanos;
  private final PgErrors errors;

  // ---- event loop only ----
  private final List<Lane> lanes = new ArrayList<>();
  private final List<Attempt> attempts = new ArrayList<>();
  private final ArrayDeque<PgCall<?>> waiting = new ArrayDeque<>();
  private PgStatements statements;
  private boolean tableReady;
  private boolean checking;
  private Lane checkLane;
  private long checkStartedAt;
  private int openFailures;

  // ---- any thread ----

  /**
   * Room for more statements on the open connections (0 until the table is checked), as of the
   * event loop's last look; a caller that finds room reserves it ({@link #inTransit}) and its call
   * counts as sent.
   */
  private volatile int capacity;

  /** Calls given a place by their caller that the event loop has not taken in yet. */
  private final java.util.concurrent.atomic.AtomicInteger inTransit =
      new java.util.concurrent.atomic.AtomicInteger();

  // ---- event loop only (continued) ----

  private long retryOpenAt;
  private RedlockException lastOpenFailure;
  private long timer = -1;
  private boolean closed;

  /** One open connection and the calls written on it, oldest first. */
  private static final class Lane {
    final SqlConnection connection;
    final ArrayDeque<PgCall<?>> sent = new ArrayDeque<>();
    int inFlight;
    boolean dead;

    Lane(SqlConnection connection) {
      this.connection = connection;
    }
  }

  /** A connection being opened. */
  private static final class Attempt {
    final long startedAt = System.nanoTime();
    boolean abandoned;
  }

  PgConnections(
      String name,
      Vertx vertx,
      PgConnectOptions connectOptions,
      PostgresDialect dialect,
      TableName table,
      boolean createTable,
      int poolSize,
      int pipeliningLimit,
      Duration connectTimeout,
      Duration queryTimeout) {
    this.name = name;
    this.context = vertx.getOrCreateContext();
    this.factory = PgDriver.INSTANCE.createConnectionFactory(vertx, new NetClientOptions());
    this.connectOptions = connectOptions;
    this.dialect = dialect;
    this.table = table;
    this.createTable = createTable;
    this.poolSize = poolSize;
    this.pipeliningLimit = pipeliningLimit;
    this.connectTimeoutNanos = connectTimeout.toNanos();
    this.answerTimeoutNanos = queryTimeout.toNanos() + GRACE_NANOS;
    this.errors = new PgErrors(name, table, dialect, verifiesCertificate(connectOptions));
    this.statements = PgStatements.of(dialect, table, false);
    long tickMillis =
        Math.max(
            20, Math.min(200, Math.min(connectTimeout.toMillis(), queryTimeout.toMillis()) / 8));
    context.runOnContext(v -> timer = vertx.setPeriodic(tickMillis, id -> tick()));
  }

  private static boolean verifiesCertificate(PgConnectOptions options) {
    return switch (options.getSslMode()) {
      case VERIFY_CA, VERIFY_FULL -> true;
      case REQUIRE -> options.getSslOptions() != null && !options.getSslOptions().isTrustAll();
      default -> false;
    };
  }

  /** The node's error translation. */
  PgErrors errors() {
    return errors;
  }

  /**
   * Opens the first connection and checks the table in the background, so that the first calls need
   * not wait for them (a node whose first calls outlast the engine's per-node timeout would miss
   * its first votes). A failure here only fails calls that come meanwhile.
   */
  void warmUp() {
    try {
      context.runOnContext(
          v -> {
            if (!closed && lanes.isEmpty()) {
              openIfNeeded(false);
            }
          });
    } catch (RejectedExecutionException e) {
      // closing
    }
  }

  /**
   * Starts {@code op}: hands it to the event loop, which writes it as soon as a connection can take
   * it. Returns at once.
   */
  <T> PgCall<T> submit(PgOp<T> op) {
    PgCall<T> call = new PgCall<>(name, op);
    // A connection has room for it: the call is sent (the event loop writes it when it runs, in
    // microseconds unless this machine is overloaded), and an abandon waits for its answer. Else
    // it waits for a connection, and an abandon drops it.
    if (capacity > 0) {
      if (inTransit.incrementAndGet() <= capacity) {
        call.reserve();
      } else {
        inTransit.decrementAndGet();
      }
    }
    try {
      context.runOnContext(v -> accept(call));
    } catch (RejectedExecutionException e) {
      if (call.reservedAtSubmit) {
        inTransit.decrementAndGet();
      }
      call.fail(new RedlockTransientException(name, "the node is closing", e));
    }
    return call;
  }

  private void accept(PgCall<?> call) {
    if (closed) {
      call.fail(closedFailure());
    } else {
      waiting.add(call);
      drain(); // publishes the capacity left, before the reservation below is given back
    }
    if (call.reservedAtSubmit) {
      inTransit.decrementAndGet();
    }
  }

  /** Writes the waiting calls that can go now, in order, then publishes the room left. */
  private void drain() {
    drainWaiting();
    int room = 0;
    if (tableReady && !closed) {
      for (Lane lane : lanes) {
        room += Math.max(0, pipeliningLimit - lane.inFlight);
      }
    }
    capacity = room;
  }

  private void drainWaiting() {
    while (!closed) {
      PgCall<?> call = waiting.peek();
      if (call == null) {
        return;
      }
      if (call.dropped() || call.done()) {
        waiting.poll();
        continue;
      }
      PgOp<?> op = call.op();
      if (op.needsTable() && !tableReady) {
        if (!checking) {
          Lane lane = pickLane();
          if (lane == null) {
            openIfNeeded(true);
          } else {
            check(lane);
          }
        }
        return; // the check's end drains again
      }
      if (op.needsFence() && !statements.fenceColumn()) {
        if (!call.fenceRechecked) {
          call.fenceRechecked = true; // someone may have added the column since the last check
          tableReady = false;
          continue;
        }
        waiting.poll();
        call.fail(new RedlockNonTransientException(name, errors.missingFence(), null));
        continue;
      }
      Lane lane = pickLane();
      if (lane == null) {
        openIfNeeded(true);
        return; // an opened or freed connection drains again
      }
      waiting.poll();
      if (lane.inFlight > 0) {
        openIfNeeded(false); // every connection is busy: spread the load over one more
      }
      send(lane, call);
    }
  }

  /** The open connection with the fewest calls in flight and room for one more; or null. */
  private Lane pickLane() {
    Lane best = null;
    for (Lane lane : lanes) {
      if (lane.inFlight < pipeliningLimit && (best == null || lane.inFlight < best.inFlight)) {
        best = lane;
        if (lane.inFlight == 0) {
          break;
        }
      }
    }
    return best;
  }

  /**
   * Opens one more connection if the pool has room and none is being opened. While a recent attempt
   * failed and no connection is open, fails the waiting calls with its error ({@code failWaiting}).
   */
  private void openIfNeeded(boolean failWaiting) {
    if (lanes.size() + attempts.size() >= poolSize || !attempts.isEmpty()) {
      return;
    }
    if (lastOpenFailure != null && System.nanoTime() - retryOpenAt < 0) {
      if (failWaiting && lanes.isEmpty()) {
        failWaiting(lastOpenFailure, false);
      }
      return;
    }
    Attempt attempt = new Attempt();
    attempts.add(attempt);
    Future<SqlConnection> connecting;
    try {
      connecting = factory.connect(context, connectOptions);
    } catch (RuntimeException e) {
      connecting = Future.failedFuture(e);
    }
    connecting.onComplete(
        ar -> {
          if (attempt.abandoned || closed) {
            if (ar.succeeded()) {
              ar.result().close();
            }
            return;
          }
          attempts.remove(attempt);
          if (ar.failed()) {
            openFailed(errors.translate("connecting", ar.cause()));
            return;
          }
          Lane lane = new Lane(ar.result());
          lane.connection.closeHandler(v -> laneBroke(lane, null));
          lane.connection.exceptionHandler(
              e -> log.debug("{}: connection error: {}", name, PgErrors.detail(e)));
          lanes.add(lane);
          if (lastOpenFailure != null) {
            log.info("{}: connected again", name);
          }
          openFailures = 0;
          lastOpenFailure = null;
          if (!tableReady && !checking) {
            check(lane); // at once, so that the first lock call finds the table checked
          }
          drain();
        });
  }

  private void openFailed(RedlockException failure) {
    openFailures++;
    long pauseMillis =
        failure instanceof RedlockNonTransientException
            ? 1_000
            : Math.min(250, 25L << Math.min(4, openFailures - 1));
    if (lastOpenFailure == null) {
      log.debug("{}: cannot connect: {}", name, failure.getMessage());
    }
    lastOpenFailure = failure;
    retryOpenAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pauseMillis);
    if (lanes.isEmpty() && attempts.isEmpty()) {
      failWaiting(failure, false);
    } else {
      drain();
    }
  }

  /** Fails the waiting calls (only those that need the table, if {@code tableOnly}). */
  private void failWaiting(RedlockException failure, boolean tableOnly) {
    for (Iterator<PgCall<?>> it = waiting.iterator(); it.hasNext(); ) {
      PgCall<?> call = it.next();
      if (!tableOnly || call.op().needsTable()) {
        it.remove();
        call.fail(failure);
      }
    }
  }

  private <T> void send(Lane lane, PgCall<T> call) {
    if (!call.claimSend()) {
      return; // abandoned in the meantime: never written
    }
    PgOp<T> op = call.op();
    lane.inFlight++;
    call.sentAt = System.nanoTime();
    lane.sent.add(call);
    Future<RowSet<Row>> answer;
    try {
      answer = lane.connection.preparedQuery(op.sql(statements)).execute(op.params());
    } catch (RuntimeException e) {
      answer = Future.failedFuture(e);
    }
    answer.onComplete(
        ar -> {
          lane.inFlight--;
          if (lane.sent.peek() == call) {
            lane.sent.poll();
          } else {
            lane.sent.remove(call);
          }
          if (ar.succeeded()) {
            T value;
            PgOp<T> next;
            try {
              value = op.answer(ar.result());
              next = op.followUp(value, statements);
            } catch (RuntimeException e) {
              call.fail(errors.translate(op.operation(), e));
              drain();
              return;
            }
            if (next != null && !lane.dead) {
              followUp(lane, call, next);
              return;
            }
            call.succeed(value);
          } else {
            Throwable cause = ar.cause();
            SqlErrors.Kind kind = PgErrors.classify(cause);
            if (kind == SqlErrors.Kind.MISSING_TABLE || kind == SqlErrors.Kind.MISSING_COLUMN) {
              tableReady = false; // changed behind our back: check (and maybe create) it again
            }
            call.fail(errors.translate(op.operation(), cause));
          }
          drain();
        });
  }

  /**
   * Runs {@code next} on the same connection for {@code call}, whose answer becomes the call's (a
   * release's second statement). Counted in flight on the connection like the first.
   */
  private <T> void followUp(Lane lane, PgCall<T> call, PgOp<T> next) {
    lane.inFlight++;
    lane.sent.add(call);
    lane.connection
        .preparedQuery(next.sql(statements))
        .execute(next.params())
        .onComplete(
            ar -> {
              lane.inFlight--;
              lane.sent.remove(call);
              if (ar.succeeded()) {
                try {
                  call.succeed(next.answer(ar.result()));
                } catch (RuntimeException e) {
                  call.fail(errors.translate(next.operation(), e));
                }
              } else {
                call.fail(errors.translate(next.operation(), ar.cause()));
              }
              drain();
            });
  }

  /** A connection broke (closed by the server, the network, or this node): drop it. */
  private void laneBroke(Lane lane, RedlockException failure) {
    if (lane.dead) {
      return;
    }
    lane.dead = true;
    lanes.remove(lane);
    RedlockException f =
        failure != null
            ? failure
            : new RedlockTransientException(
                name,
                "lost the connection to the server: check that it is up and reachable; a retry"
                    + " opens a new connection",
                null);
    PgCall<?> call;
    while ((call = lane.sent.poll()) != null) {
      call.fail(f);
    }
    if (lane == checkLane) {
      checkLane = null;
    }
    if (failure != null) {
      lane.connection.close(); // the server may never answer the goodbye: drop it all the same
    }
    if (!closed) {
      drain();
    }
  }

  // ---- the table check ----

  private void check(Lane lane) {
    checking = true;
    checkLane = lane;
    checkStartedAt = System.nanoTime();
    lane.inFlight++;
    SqlConnection c = lane.connection;
    simple(c, dialect.probe(table))
        .recover(
            e -> {
              if (PgErrors.classify(e) != SqlErrors.Kind.MISSING_TABLE) {
                return Future.failedFuture(e);
              }
              if (!createTable) {
                return Future.failedFuture(
                    new RedlockNonTransientException(name, errors.missingTable(), null));
              }
              return createTable(c, 0);
            })
        .compose(v -> fenceColumn(c))
        .onComplete(
            ar -> {
              lane.inFlight--;
              checking = false;
              checkLane = null;
              if (closed) {
                return;
              }
              if (ar.succeeded()) {
                statements = PgStatements.of(dialect, table, ar.result());
                tableReady = true;
              } else {
                failWaiting(errors.translate("checking table " + table, ar.cause()), true);
              }
              drain();
            });
  }

  /** Runs the DDL from statement {@code i} on; another client may create the table meanwhile. */
  private Future<Void> createTable(SqlConnection c, int i) {
    List<String> ddl = dialect.createTable(table);
    if (i >= ddl.size()) {
      return simple(c, dialect.probe(table));
    }
    return simple(c, ddl.get(i))
        .recover(e -> simple(c, dialect.probe(table))) // created by someone else: fine if usable
        .compose(v -> createTable(c, i + 1));
  }

  /** True if the table has the fencing counter column, after adding it if allowed. */
  private Future<Boolean> fenceColumn(SqlConnection c) {
    return simple(c, dialect.probeFence(table))
        .map(true)
        .recover(
            e -> {
              if (PgErrors.classify(e) != SqlErrors.Kind.MISSING_COLUMN) {
                return Future.failedFuture(e);
              }
              if (!createTable) {
                return Future.succeededFuture(false);
              }
              return simple(c, dialect.addFenceColumn(table))
                  .recover(added -> simple(c, dialect.probeFence(table)))
                  .map(true);
            });
  }

  private static Future<Void> simple(SqlConnection c, String sql) {
    return c.query(sql).execute().mapEmpty();
  }

  // ---- time bounds ----

  private void tick() {
    if (closed) {
      return;
    }
    long now = System.nanoTime();
    for (Lane lane : new ArrayList<>(lanes)) {
      PgCall<?> oldest = lane.sent.peek();
      boolean stuck =
          (oldest != null && now - oldest.sentAt > answerTimeoutNanos)
              || (lane == checkLane && now - checkStartedAt > answerTimeoutNanos);
      if (stuck) {
        log.debug("{}: no answer on a connection for too long; closing it", name);
        laneBroke(
            lane,
            new RedlockTransientException(
                name,
                "no answer within the query timeout of "
                    + TimeUnit.NANOSECONDS.toMillis(answerTimeoutNanos - GRACE_NANOS)
                    + " ms (+ 1 s): the server is stalled or unreachable; the connection was"
                    + " closed",
                null));
      }
    }
    for (Iterator<Attempt> it = attempts.iterator(); it.hasNext(); ) {
      Attempt attempt = it.next();
      if (now - attempt.startedAt > connectTimeoutNanos) {
        attempt.abandoned = true;
        it.remove();
        openFailed(
            new RedlockTransientException(
                name,
                "could not connect within "
                    + TimeUnit.NANOSECONDS.toMillis(connectTimeoutNanos)
                    + " ms: check that the server is up and reachable at the URI's host and port,"
                    + " or raise redlock.connectionTimeout",
                null));
      }
    }
    for (Iterator<PgCall<?>> it = waiting.iterator(); it.hasNext(); ) {
      PgCall<?> call = it.next();
      if (call.dropped() || call.done()) {
        it.remove();
      } else if (now - call.queuedAt > connectTimeoutNanos) {
        it.remove();
        call.fail(
            new RedlockTransientException(
                name,
                "no connection could take the call within the connection timeout of "
                    + TimeUnit.NANOSECONDS.toMillis(connectTimeoutNanos)
                    + " ms: check the server, or raise redlock.connectionTimeout or"
                    + " redlock.poolSize",
                null));
      }
    }
    if (lanes.isEmpty() && !waiting.isEmpty()) {
      drain(); // a pause after a failed attempt may have ended
    }
  }

  // ---- closing ----

  private RedlockException closedFailure() {
    return new RedlockTransientException(name, "the node was closed", null);
  }

  /**
   * Fails every waiting call, closes every connection and the connection factory; the future ends
   * once done (within a bound of its own). Idempotent.
   */
  CompletableFuture<Void> close() {
    CompletableFuture<Void> done = new CompletableFuture<>();
    try {
      context.runOnContext(
          v -> {
            if (closed) {
              done.complete(null);
              return;
            }
            closed = true;
            capacity = 0;
            if (timer >= 0) {
              context.owner().cancelTimer(timer);
            }
            failWaiting(closedFailure(), false);
            List<Future<Void>> closing = new ArrayList<>();
            for (Lane lane : new ArrayList<>(lanes)) {
              lane.dead = true;
              PgCall<?> call;
              while ((call = lane.sent.poll()) != null) {
                call.fail(closedFailure());
              }
              closing.add(lane.connection.close());
            }
            lanes.clear();
            for (Attempt attempt : attempts) {
              attempt.abandoned = true;
            }
            attempts.clear();
            Future.join(closing)
                .eventually(
                    () -> {
                      Promise<Void> p = Promise.promise();
                      factory.close(p);
                      return p.future();
                    })
                .onComplete(ar -> done.complete(null));
          });
    } catch (RejectedExecutionException e) {
      done.complete(null); // the event loop is gone already
    }
    return done;
  }
}
