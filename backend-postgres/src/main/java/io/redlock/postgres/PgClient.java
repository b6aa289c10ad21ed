package io.redlock.postgres;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.Reply;
import io.redlock.spi.support.Replies;
import io.redlock.sql.internal.PostgresDialect;
import io.redlock.sql.internal.SqlErrors;
import io.redlock.sql.internal.TableName;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The calls of one node on Vert.x's pipelined PostgreSQL pool ({@link PgBuilder#client}): up to
 * {@code poolSize} connections, each carrying up to {@code pipeliningLimit} statements in flight.
 *
 * <ul>
 *   <li>A call made while the connections have room is sent at once. Beyond that it waits here, in
 *       order, for a call to end; one the engine abandons meanwhile is dropped, never written (but
 *       a release), and one that waits longer than the connection timeout fails. So a frozen server
 *       finds at most {@code poolSize × pipeliningLimit} statements to answer when it thaws.
 *   <li>The server bounds its statements ({@code statement_timeout}); a call still without an
 *       answer a second after that and the connection timeout (a server frozen or unreachable, a
 *       connection that cannot be opened) fails, its statement holding its place on the connection
 *       until the server answers or the connection breaks.
 *   <li>The table is checked (and created or completed, if allowed) before the first lock
 *       statement, with {@link PostgresDialect}'s statements, and again after a statement found it
 *       or a column missing.
 * </ul>
 */
final class PgClient {
  private static final Logger log = LoggerFactory.getLogger(PgClient.class);
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);
  private static final Duration GRACE = Duration.ofSeconds(1);
  private static Vertx sharedVertx;
  private static int sharedUsers;

  private final String name;
  private final TableName table;
  private final PostgresDialect dialect;
  private final boolean createTable;
  private final long connectTimeoutMillis;
  private final Vertx vertx;
  private final boolean ownVertx;
  private final SqlClient client;
  private final PgErrors errors;

  /** The table's statements once it was checked; null until then and after it changed. */
  private volatile PgStatements statements;

  /** The table check under way, or null; guarded by {@code this}. */
  private Future<PgStatements> checking;

  /** Calls beyond what the connections can carry wait here. */
  private final ArrayDeque<Call<?>> waiting = new ArrayDeque<>();

  /** The calls sent, oldest first (some of them ended); guarded by waiting. */
  private final ArrayDeque<Call<?>> sent = new ArrayDeque<>();

  private final int capacity;
  private int inFlight; // guarded by waiting
  private final long answerNanos;
  private final long timer;

  /**
   * Opens the first connection and checks the table in the background, so that the first calls find
   * them ready (a node whose first calls outlast the engine's per-node timeout would miss its first
   * votes); a failure here only fails calls that come meanwhile.
   *
   * @param vertx the caller's instance, or null for the one shared by the JVM's nodes
   */
  PgClient(
      String name,
      TableName table,
      PostgresDialect dialect,
      boolean createTable,
      PgConnectOptions options,
      int poolSize,
      Duration connectTimeout,
      Duration queryTimeout,
      Vertx vertx) {
    this.name = name;
    this.table = table;
    this.dialect = dialect;
    this.createTable = createTable;
    this.connectTimeoutMillis = connectTimeout.toMillis();
    this.answerNanos = connectTimeout.plus(queryTimeout).plus(GRACE).toNanos();
    this.capacity = poolSize * options.getPipeliningLimit();
    this.errors = new PgErrors(name, table, dialect, verifiesCertificate(options));
    this.ownVertx = vertx == null;
    this.vertx = ownVertx ? acquireSharedVertx() : vertx;
    // no wait bound in the pool: it would cost a timer per call; the tick bounds every call
    PoolOptions pool = new PoolOptions().setMaxSize(poolSize).setConnectionTimeout(0);
    this.client = PgBuilder.client().with(pool).connectingTo(options).using(this.vertx).build();
    long tick = Math.max(20, Math.min(200, queryTimeout.toMillis() / 8));
    this.timer = this.vertx.setPeriodic(tick, id -> tick());
    check();
  }

  Vertx vertx() {
    return vertx;
  }

  /** Runs one more statement on the pool (a release's second one). */
  Future<RowSet<Row>> run(String sql, Tuple params) {
    return client.preparedQuery(sql).execute(params);
  }

  /** Fails the waiting calls, closes the connections and the shared Vert.x if last. Idempotent. */
  void close() {
    List<Call<?>> dropped;
    synchronized (waiting) {
      dropped = new ArrayList<>(waiting);
      waiting.clear();
    }
    for (Call<?> call : dropped) {
      if (call.claimed.compareAndSet(false, true)) {
        call.result.completeExceptionally(
            new RedlockTransientException(name, "the node was closed", null));
      }
    }
    vertx.cancelTimer(timer);
    await(client.close());
    if (ownVertx) {
      releaseSharedVertx(vertx);
    }
  }

  /** What a statement needs: nothing, the table, or the table's fencing counter column. */
  enum Use {
    NO_TABLE,
    TABLE,
    FENCE
  }

  /** One call: the reply the engine awaits, and the statement it runs. */
  private final class Call<T> implements Reply<T> {
    final CompletableFuture<T> result = new CompletableFuture<>();
    final Reply<T> reply = Replies.of(result, name);
    final AtomicBoolean claimed = new AtomicBoolean(); // sent, dropped or failed unsent
    final long madeAt = System.nanoTime();
    long sentAt;
    boolean rechecked;
    final String operation;
    final Use use;
    final Function<PgStatements, String> sql;
    final Tuple params;
    final BiFunction<RowSet<Row>, PgStatements, ?> answer;

    Call(
        String operation,
        Use use,
        Function<PgStatements, String> sql,
        Tuple params,
        BiFunction<RowSet<Row>, PgStatements, ?> answer) {
      this.operation = operation;
      this.use = use;
      this.sql = sql;
      this.params = params;
      this.answer = answer;
    }

    @Override
    public T await(Duration timeout) {
      return reply.await(timeout);
    }

    @Override
    public void abandon(Consumer<? super T> ended) {
      // a release is still sent when it can be: it can only delete the caller's own key
      if (!"release".equals(operation) && claimed.compareAndSet(false, true)) {
        result.completeExceptionally(
            new RedlockTransientException(name, operation + " was dropped unsent", null));
      }
      reply.abandon(ended);
    }
  }

  /**
   * Starts a call on the table: sent at once if the connections have room for it, else when a call
   * ends; one the engine gives up on before is dropped. Waits no longer than the connection
   * timeout. {@code answer} gives the answer, or a future of it.
   */
  <T> Reply<T> submit(
      String operation,
      Use use,
      Function<PgStatements, String> sql,
      Tuple params,
      BiFunction<RowSet<Row>, PgStatements, ?> answer) {
    Call<T> call = new Call<>(operation, use, sql, params, answer);
    boolean now;
    synchronized (waiting) {
      now = inFlight < capacity && waiting.isEmpty();
      if (now) {
        admit(call);
      } else {
        waiting.add(call);
      }
    }
    if (now) {
      dispatch(call);
    }
    return call;
  }

  /** Runs a claimed call once the table is checked. */
  @SuppressWarnings("unchecked")
  private <T> void dispatch(Call<T> call) {
    PgStatements s = statements;
    boolean fence = call.use == Use.FENCE;
    if (call.use != Use.NO_TABLE && (s == null || (fence && !s.fenceColumn() && !call.rechecked))) {
      // not checked yet, or someone may have added the counter column since the last check
      call.rechecked = true;
      if (s != null) {
        statements = null;
      }
      check()
          .onComplete(
              (checked, failure) -> {
                if (failure != null) {
                  end(call, null, failure);
                } else {
                  dispatch(call);
                }
              });
      return;
    }
    if (fence && !s.fenceColumn()) {
      end(
          call,
          null,
          new RedlockNonTransientException(
              name, SqlErrors.missingFenceMessage(table, dialect), null));
      return;
    }
    client
        .preparedQuery(call.sql.apply(s))
        .execute(call.params)
        .compose(
            rows -> {
              Object answer = call.answer.apply(rows, s);
              return answer instanceof Future<?> f
                  ? (Future<T>) f
                  : Future.succeededFuture((T) answer);
            })
        .onComplete((value, failure) -> end(call, value, failure));
  }

  /** Ends a claimed call, and lets the next waiting one go. */
  private <T> void end(Call<T> call, T value, Throwable failure) {
    if (failure == null) {
      call.result.complete(value);
    } else {
      SqlErrors.Kind kind = PgErrors.classify(failure);
      if (kind == SqlErrors.Kind.MISSING_TABLE || kind == SqlErrors.Kind.MISSING_COLUMN) {
        statements = null; // changed behind our back: check (and maybe create) it again
      }
      call.result.completeExceptionally(errors.translate(call.operation, failure));
    }
    Call<?> next;
    synchronized (waiting) {
      inFlight--;
      while ((next = waiting.poll()) != null && !next.claimed.compareAndSet(false, true)) {
        // dropped, or waited past the connection timeout
      }
      if (next != null) {
        admit(next);
      }
    }
    if (next != null) {
      dispatch(next);
    }
  }

  /** Counts a call as sent; under the lock. */
  private void admit(Call<?> call) {
    inFlight++;
    call.claimed.set(true);
    call.sentAt = System.nanoTime();
    sent.add(call);
  }

  /**
   * Fails the calls that waited for room longer than the connection timeout, and the sent calls
   * that have had no answer within the connection and query timeouts and a second (a frozen server,
   * a dead path): their statements still hold their places on the connections until the server
   * answers or the connection breaks.
   */
  private void tick() {
    long now = System.nanoTime();
    List<Call<?>> late = new ArrayList<>();
    List<Call<?>> unsent = new ArrayList<>();
    synchronized (waiting) {
      Call<?> c;
      while ((c = sent.peek()) != null && (c.result.isDone() || now - c.sentAt - answerNanos > 0)) {
        sent.poll();
        if (!c.result.isDone()) {
          late.add(c);
        }
      }
      while ((c = waiting.peek()) != null
          && (c.claimed.get() || now - c.madeAt - connectTimeoutMillis * 1_000_000 > 0)) {
        waiting.poll();
        unsent.add(c);
      }
    }
    for (Call<?> call : late) {
      call.result.completeExceptionally(
          new RedlockTransientException(
              name,
              "no answer within "
                  + answerNanos / 1_000_000
                  + " ms (the connection and query timeouts and 1 s): the server is stalled or"
                  + " unreachable",
              null));
    }
    for (Call<?> call : unsent) {
      if (call.claimed.compareAndSet(false, true)) {
        call.result.completeExceptionally(
            new RedlockTransientException(
                name,
                "no connection could take the call within the connection timeout of "
                    + connectTimeoutMillis
                    + " ms: check the server, or raise redlock.connectionTimeout or"
                    + " redlock.poolSize",
                null));
      }
    }
  }

  // ---- the table check ----

  /** The table check under way, or a new one. */
  synchronized Future<PgStatements> check() {
    if (checking != null) {
      return checking;
    }
    Promise<PgStatements> promise = Promise.promise();
    checking = promise.future();
    simple(dialect.probe(table))
        .recover(
            e -> {
              if (PgErrors.classify(e) != SqlErrors.Kind.MISSING_TABLE) {
                return Future.failedFuture(e);
              }
              if (!createTable) {
                return Future.failedFuture(
                    new RedlockNonTransientException(
                        name, SqlErrors.missingTableMessage(table, dialect.ddlText(table)), null));
              }
              return createTable(0);
            })
        .compose(v -> fenceColumn())
        .onComplete(
            (fence, failure) -> {
              synchronized (this) {
                checking = null;
              }
              if (failure == null) {
                statements = PgStatements.of(dialect, table, fence);
                promise.complete(statements);
              } else {
                promise.fail(errors.translate("checking table " + table, failure));
              }
            });
    return checking;
  }

  /** Runs the DDL from statement {@code i} on; another client may create the table meanwhile. */
  private Future<Void> createTable(int i) {
    List<String> ddl = dialect.createTable(table);
    if (i >= ddl.size()) {
      return simple(dialect.probe(table));
    }
    return simple(ddl.get(i))
        .recover(e -> simple(dialect.probe(table))) // created by someone else: fine if usable
        .compose(v -> createTable(i + 1));
  }

  /** True if the table has the fencing counter column, after adding it if allowed. */
  private Future<Boolean> fenceColumn() {
    return simple(dialect.probeFence(table))
        .map(true)
        .recover(
            e -> {
              if (PgErrors.classify(e) != SqlErrors.Kind.MISSING_COLUMN) {
                return Future.failedFuture(e);
              }
              if (!createTable) {
                return Future.succeededFuture(false);
              }
              return simple(dialect.addFenceColumn(table))
                  .recover(added -> simple(dialect.probeFence(table)))
                  .map(true);
            });
  }

  private Future<Void> simple(String sql) {
    return client.query(sql).execute().mapEmpty();
  }

  private static boolean verifiesCertificate(PgConnectOptions options) {
    return switch (options.getSslMode()) {
      case VERIFY_CA, VERIFY_FULL -> true;
      case REQUIRE -> options.getSslOptions() != null && !options.getSslOptions().isTrustAll();
      default -> false;
    };
  }

  /** Waits for {@code future} up to {@link #CLOSE_WAIT}, unless on an event loop (ourselves). */
  private static void await(Future<?> future) {
    if (Context.isOnVertxThread()) {
      return;
    }
    try {
      future.toCompletionStage().toCompletableFuture().get(CLOSE_WAIT.toMillis(), MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      log.debug("closing did not end within {} ms: {}", CLOSE_WAIT.toMillis(), e.toString());
    }
  }

  /**
   * The Vert.x instance of the nodes not given one: one per JVM, made by the first and closed by
   * the last to close, so that they share one event-loop thread (a fan-out over two PostgreSQL
   * nodes wakes one thread, not two); daemon threads, so that a node never keeps the JVM alive.
   */
  private static synchronized Vertx acquireSharedVertx() {
    if (sharedVertx == null) {
      sharedVertx =
          Vertx.vertx(
              new VertxOptions()
                  .setEventLoopPoolSize(1)
                  .setWorkerPoolSize(1)
                  .setInternalBlockingPoolSize(1)
                  .setPreferNativeTransport(true)
                  .setUseDaemonThread(true));
    }
    sharedUsers++;
    return sharedVertx;
  }

  private static void releaseSharedVertx(Vertx vertx) {
    synchronized (PgClient.class) {
      if (vertx != sharedVertx || --sharedUsers > 0) {
        return;
      }
      sharedVertx = null;
    }
    await(vertx.close());
  }
}
