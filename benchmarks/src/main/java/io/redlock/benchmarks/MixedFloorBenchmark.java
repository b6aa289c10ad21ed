package io.redlock.benchmarks;

import io.redlock.benchmarks.RedisFloorBenchmark.FloorConnection;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.ThreadParams;
import redis.clients.jedis.CommandArguments;

/**
 * A floor for the mixed quorum of 3 Redis + 2 PostgreSQL nodes over pgjdbc, all five requests in
 * flight at once: the least a JDBC client can do. JDBC blocks, so each PostgreSQL node gets a
 * worker thread (with its own connection and prepared statements, per benchmark thread) that runs
 * the statements of {@link PostgresStatements}; meanwhile the benchmark thread multiplexes the
 * three Redis nodes, then waits for the two workers. {@link VertxFloorBenchmark#mixed} is the same
 * without worker threads.
 */
public class MixedFloorBenchmark {

  /** One benchmark thread's connections, statements and workers. */
  @State(Scope.Thread)
  public static class Nodes {
    FloorConnection[] redis;
    CommandArguments acquire;
    CommandArguments release;
    Connection[] pg;
    ExecutorService[] workers;
    Callable<Boolean>[] pgAcquire;
    Callable<Boolean>[] pgRelease;
    Future<?>[] pending;

    @Setup(Level.Trial)
    public void open(ThreadParams thread) throws SQLException {
      open(thread.getThreadIndex());
    }

    /** Opens the connections of benchmark thread {@code index} (also used by {@link Floors}). */
    @SuppressWarnings({"unchecked", "rawtypes"}) // generic array creation
    void open(int index) throws SQLException {
      BenchServers servers = BenchServers.get();
      redis = RedisFloorBenchmark.connect(servers.redis().subList(0, 3));
      String key = "bench:mixedfloor:" + index;
      String token = "mixed-floor-token-" + index;
      acquire = RedisFloorBenchmark.acquireCommand(key, token);
      release = RedisFloorBenchmark.releaseCommand(key, token);

      List<String> pgUrls = servers.postgres().subList(0, 2);
      pg = new Connection[pgUrls.size()];
      workers = new ExecutorService[pgUrls.size()];
      pgAcquire = new Callable[pgUrls.size()];
      pgRelease = new Callable[pgUrls.size()];
      pending = new Future<?>[pgUrls.size()];
      for (int i = 0; i < pg.length; i++) {
        pg[i] = DriverManager.getConnection(pgUrls.get(i));
        PostgresStatements.createTable(pg[i]);
        PreparedStatement a = PostgresStatements.acquire(pg[i], key, token);
        PreparedStatement r = PostgresStatements.release(pg[i], key, token);
        pgAcquire[i] = () -> a.executeUpdate() == 1;
        pgRelease[i] =
            () -> {
              try (ResultSet rs = r.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
              }
            };
        workers[i] = Executors.newSingleThreadExecutor();
      }
    }

    @TearDown(Level.Trial)
    public void close() throws SQLException {
      for (ExecutorService w : workers) {
        w.shutdownNow();
      }
      for (FloorConnection c : redis) {
        c.close();
      }
      for (Connection c : pg) {
        c.close();
      }
    }
  }

  @Benchmark
  public int cycle(Nodes nodes, Recorder recorder) throws InterruptedException, ExecutionException {
    long start = System.nanoTime();
    int acquired = phase(nodes, nodes.pgAcquire, nodes.acquire, true);
    recorder.acquired(System.nanoTime() - start);
    int released = phase(nodes, nodes.pgRelease, nodes.release, false);
    if (acquired != 5 || released != 5) {
      throw new IllegalStateException(
          "mixed floor cycle acquired " + acquired + " and released " + released + " nodes");
    }
    return acquired;
  }

  /** The JDBC calls go to their workers first (they are slower), then Redis is multiplexed. */
  private static int phase(
      Nodes nodes, Callable<Boolean>[] pgCalls, CommandArguments redisCommand, boolean acquire)
      throws InterruptedException, ExecutionException {
    for (int i = 0; i < pgCalls.length; i++) {
      nodes.pending[i] = nodes.workers[i].submit(pgCalls[i]);
    }
    int yes = RedisFloorBenchmark.multiplex(nodes.redis, redisCommand, acquire);
    for (Future<?> f : nodes.pending) {
      if (Boolean.TRUE.equals(f.get())) {
        yes++;
      }
    }
    return yes;
  }
}
