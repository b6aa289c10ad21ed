package io.redlock.benchmarks;

import io.redlock.benchmarks.RedisFloorBenchmark.FloorConnection;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.List;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.ThreadParams;
import redis.clients.jedis.CommandArguments;

/**
 * The lowest floor for the mixed quorum of 3 Redis + 2 PostgreSQL nodes: one thread and no
 * hand-offs at all. It writes the statement to both PostgreSQL sockets ({@link PgWire}: the wire
 * protocol, which unlike JDBC can send without waiting) and the command to the three Redis sockets,
 * then reads the five answers; the same statements as {@link PostgresFloorBenchmark}. Its cycle is
 * the time the slowest of the five nodes takes to answer when all are asked at once: "the slowest
 * node's raw round trips" of a mixed quorum on this machine, where the five servers share the
 * cores.
 */
public class MixedWireFloorBenchmark {

  /** One benchmark thread's connections and commands. */
  @State(Scope.Thread)
  public static class Nodes {
    FloorConnection[] redis;
    CommandArguments acquire;
    CommandArguments release;
    PgWire[] pg;
    byte[] keyHash;
    String key;
    byte[] token;

    @Setup(Level.Trial)
    public void open(ThreadParams thread) throws SQLException {
      open(thread.getThreadIndex());
    }

    /** Opens the connections of benchmark thread {@code index} (also used by {@link Floors}). */
    void open(int index) throws SQLException {
      BenchServers servers = BenchServers.get();
      redis = RedisFloorBenchmark.connect(servers.redis().subList(0, 3));
      key = "bench:wirefloor:" + index;
      String tokenText = "wire-floor-token-" + index;
      acquire = RedisFloorBenchmark.acquireCommand(key, tokenText);
      release = RedisFloorBenchmark.releaseCommand(key, tokenText);
      keyHash = PostgresStatements.sha256(key);
      token = tokenText.getBytes(StandardCharsets.UTF_8);
      List<String> pgUrls = servers.postgres().subList(0, 2);
      pg = new PgWire[pgUrls.size()];
      for (int i = 0; i < pg.length; i++) {
        try (Connection c = DriverManager.getConnection(pgUrls.get(i))) {
          PostgresStatements.createTable(c);
        }
        pg[i] = new PgWire(pgUrls.get(i));
        PostgresStatements.prepare(pg[i]);
      }
    }

    @TearDown(Level.Trial)
    public void close() {
      for (FloorConnection c : redis) {
        c.close();
      }
      for (PgWire c : pg) {
        c.close();
      }
    }
  }

  private static final Long TTL_MICROS = Workload.TTL.toNanos() / 1_000;

  @Benchmark
  public int cycle(Nodes nodes, Recorder recorder) {
    long start = System.nanoTime();
    for (PgWire c : nodes.pg) {
      c.send("acquire", nodes.keyHash, nodes.key, nodes.token, TTL_MICROS);
      c.flush();
    }
    int acquired =
        RedisFloorBenchmark.multiplex(nodes.redis, nodes.acquire, true) + postgres(nodes);
    recorder.acquired(System.nanoTime() - start);
    for (PgWire c : nodes.pg) {
      c.send("release", nodes.keyHash, nodes.token);
      c.flush();
    }
    int released =
        RedisFloorBenchmark.multiplex(nodes.redis, nodes.release, false) + postgres(nodes);
    if (acquired != 5 || released != 5) {
      throw new IllegalStateException(
          "wire floor cycle acquired " + acquired + " and released " + released + " nodes");
    }
    return acquired;
  }

  private static int postgres(Nodes nodes) {
    int yes = 0;
    for (PgWire c : nodes.pg) {
      yes += c.result() == 1 ? 1 : 0;
    }
    return yes;
  }
}
