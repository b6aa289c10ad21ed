package io.redlock.benchmarks;

import io.redlock.benchmarks.RedisFloorBenchmark.FloorConnection;
import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.PgConnection;
import io.vertx.sqlclient.PreparedQuery;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowIterator;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.ThreadParams;
import redis.clients.jedis.CommandArguments;

/**
 * Floors on Vert.x's reactive PostgreSQL client ({@code vertx-pg-client}, the client {@code
 * redlock-backend-postgres} uses), which unlike JDBC can send a statement without a thread waiting
 * for its answer. Each benchmark thread has its own connection to each PostgreSQL server, the
 * statements of {@link PostgresStatements} prepared on it once, and a fixed key and token; one
 * Vert.x event loop serves all connections, set up as the backend sets up its own.
 *
 * <ul>
 *   <li>{@link #mixed}: 3 Redis + 2 PostgreSQL, all five requests in flight at once. The benchmark
 *       thread hands the statement to both PostgreSQL connections (the event loop writes them),
 *       writes the command to the three Redis sockets (Jedis, as {@link
 *       RedisFloorBenchmark#multiplexed}), reads the three Redis replies, then waits for the two
 *       PostgreSQL answers. The least a client can do for a mixed quorum without a thread per call.
 *   <li>{@link #postgres}: one PostgreSQL server, for reference: what the event loop's hand-off
 *       costs against {@link PostgresFloorBenchmark}'s blocking pgjdbc call.
 * </ul>
 */
public class VertxFloorBenchmark {
  private static final long TTL_MICROS = Workload.TTL.toNanos() / 1_000;
  private static final long ANSWER_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

  /** The JVM's Vert.x instance: one event loop, as {@code redlock-backend-postgres} has. */
  @State(Scope.Benchmark)
  public static class Loop {
    Vertx vertx;

    @Setup(Level.Trial)
    public void open() {
      vertx =
          Vertx.vertx(
              new VertxOptions()
                  .setEventLoopPoolSize(1)
                  .setWorkerPoolSize(1)
                  .setInternalBlockingPoolSize(1)
                  .setPreferNativeTransport(true)
                  .setUseDaemonThread(true));
    }

    @TearDown(Level.Trial)
    public void close() {
      block(vertx.close());
    }
  }

  /** One benchmark thread's connections for {@link #mixed}: 3 Redis, 2 PostgreSQL. */
  @State(Scope.Thread)
  public static class Mixed {
    FloorConnection[] redis;
    CommandArguments acquire;
    CommandArguments release;
    PgFloorConnection[] pg;

    @Setup(Level.Trial)
    public void open(Loop loop, ThreadParams thread) throws SQLException {
      open(loop.vertx, thread.getThreadIndex());
    }

    /** Opens the connections of benchmark thread {@code index} (also used by {@link Floors}). */
    void open(Vertx vertx, int index) throws SQLException {
      BenchServers servers = BenchServers.get();
      redis = RedisFloorBenchmark.connect(servers.redis().subList(0, 3));
      String key = "bench:vertxfloor:" + index;
      String token = "vertx-floor-token-" + index;
      acquire = RedisFloorBenchmark.acquireCommand(key, token);
      release = RedisFloorBenchmark.releaseCommand(key, token);
      List<String> pgUrls = servers.postgres().subList(0, 2);
      pg = new PgFloorConnection[pgUrls.size()];
      for (int i = 0; i < pg.length; i++) {
        pg[i] = new PgFloorConnection(vertx, pgUrls.get(i), key, token);
      }
    }

    @TearDown(Level.Trial)
    public void close() {
      for (FloorConnection c : redis) {
        c.close();
      }
      for (PgFloorConnection c : pg) {
        c.close();
      }
    }
  }

  /** One benchmark thread's connection for {@link #postgres}. */
  @State(Scope.Thread)
  public static class Single {
    PgFloorConnection pg;

    @Setup(Level.Trial)
    public void open(Loop loop, ThreadParams thread) throws SQLException {
      open(loop.vertx, thread.getThreadIndex());
    }

    /** Opens the connection of benchmark thread {@code index} (also used by {@link Floors}). */
    void open(Vertx vertx, int index) throws SQLException {
      pg =
          new PgFloorConnection(
              vertx,
              BenchServers.get().postgres().get(0),
              "bench:vertxpgfloor:" + index,
              "vertx-pg-floor-token-" + index);
    }

    @TearDown(Level.Trial)
    public void close() {
      pg.close();
    }
  }

  @Benchmark
  public int mixed(Mixed nodes, Recorder recorder) {
    long start = System.nanoTime();
    int acquired = phase(nodes, nodes.acquire, true);
    recorder.acquired(System.nanoTime() - start);
    int released = phase(nodes, nodes.release, false);
    if (acquired != 5 || released != 5) {
      throw new IllegalStateException(
          "Vert.x mixed floor cycle acquired " + acquired + " and released " + released + " nodes");
    }
    return acquired;
  }

  /** PostgreSQL first (the slower nodes: their statements go out first), then Redis. */
  private static int phase(Mixed nodes, CommandArguments redisCommand, boolean acquire) {
    for (PgFloorConnection c : nodes.pg) {
      c.start(acquire);
    }
    int yes = RedisFloorBenchmark.multiplex(nodes.redis, redisCommand, acquire);
    for (PgFloorConnection c : nodes.pg) {
      yes += c.answer() ? 1 : 0;
    }
    return yes;
  }

  @Benchmark
  public boolean postgres(Single node, Recorder recorder) {
    long start = System.nanoTime();
    node.pg.start(true);
    boolean acquired = node.pg.answer();
    recorder.acquired(System.nanoTime() - start);
    node.pg.start(false);
    boolean released = node.pg.answer();
    if (!acquired || !released) {
      throw new IllegalStateException(
          "Vert.x PostgreSQL floor cycle acquired " + acquired + ", released " + released);
    }
    return released;
  }

  /**
   * A Vert.x connection with the acquire and release statements prepared, for one key and token.
   * One statement at a time: {@link #start} hands it to the event loop, which answers through
   * {@link #handle}; {@link #answer} parks the calling thread until then. Nothing is allocated per
   * call beyond what the client itself allocates.
   */
  static final class PgFloorConnection implements Handler<AsyncResult<RowSet<Row>>> {
    private final PgConnection connection;
    private final PreparedQuery<RowSet<Row>> acquire;
    private final PreparedQuery<RowSet<Row>> release;
    private final Tuple acquireArgs;
    private final Tuple releaseArgs;
    private Thread waiter;
    private boolean acquiring;
    private boolean yes;
    private Throwable failure;
    private volatile boolean done;

    PgFloorConnection(Vertx vertx, String jdbcUrl, String key, String token) throws SQLException {
      try (Connection c = DriverManager.getConnection(jdbcUrl)) {
        PostgresStatements.createTable(c);
      }
      connection =
          block(
              PgConnection.connect(
                  vertx, PgConnectOptions.fromUri(BenchServers.libpqUri(jdbcUrl))));
      acquire =
          block(connection.prepare(PostgresStatements.numbered(PostgresStatements.ACQUIRE)))
              .query();
      release =
          block(connection.prepare(PostgresStatements.numbered(PostgresStatements.RELEASE)))
              .query();
      Buffer keyHash = Buffer.buffer(PostgresStatements.sha256(key));
      Buffer tokenBytes = Buffer.buffer(token.getBytes(StandardCharsets.UTF_8));
      acquireArgs = Tuple.of(keyHash, key, tokenBytes, TTL_MICROS);
      releaseArgs = Tuple.of(keyHash, tokenBytes);
    }

    /**
     * Sends the acquire ({@code true}) or release statement; the answer comes to {@link #handle}.
     */
    void start(boolean acquire) {
      waiter = Thread.currentThread();
      acquiring = acquire;
      failure = null;
      done = false;
      (acquire ? this.acquire.execute(acquireArgs) : release.execute(releaseArgs)).onComplete(this);
    }

    /** On the event loop: the statement's answer. */
    @Override
    public void handle(AsyncResult<RowSet<Row>> answer) {
      if (answer.failed()) {
        failure = answer.cause();
      } else if (acquiring) {
        yes = answer.result().rowCount() == 1;
      } else {
        RowIterator<Row> rows = answer.result().iterator();
        yes = rows.hasNext() && Boolean.TRUE.equals(rows.next().getBoolean(0));
      }
      done = true;
      LockSupport.unpark(waiter);
    }

    /** Waits for the answer of the statement {@link #start} sent: acquired, or released. */
    boolean answer() {
      long deadline = System.nanoTime() + ANSWER_TIMEOUT_NANOS;
      while (!done) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new IllegalStateException("no answer from PostgreSQL within 10 s");
        }
        LockSupport.parkNanos(this, left);
      }
      if (failure != null) {
        throw new IllegalStateException("a floor statement failed", failure);
      }
      return yes;
    }

    void close() {
      try {
        block(connection.close());
      } catch (RuntimeException e) {
        // the event loop may be gone already
      }
    }
  }

  /** Blocks for a set-up or tear-down step. */
  private static <T> T block(Future<T> future) {
    try {
      return future.toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (Exception e) {
      throw new IllegalStateException("a Vert.x set-up step failed: " + e, e);
    }
  }
}
