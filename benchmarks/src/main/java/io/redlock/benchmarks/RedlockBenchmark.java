package io.redlock.benchmarks;

import io.redlock.Lease;
import io.redlock.Redlock;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * This library, through its public API only ({@link Redlock#tryAcquire}, {@link Lease#release}),
 * with default settings, nodes given by URI as users give them: a cycle is acquire then release on
 * the benchmark thread's own key. Failed acquires and releases that some node did not confirm
 * ({@link io.redlock.ReleaseOutcome#complete()} false) are counted by the {@link Recorder}.
 */
public class RedlockBenchmark {

  /** One Redlock shared by all threads, over the nodes of one topology. */
  @State(Scope.Benchmark)
  public static class Quorum {
    /** Which nodes: see {@link #uris}. */
    @Param({
      "redis5",
      "redis1",
      "redis3pg2",
      "pg1",
      "pg5",
      "redis3pg2vertx",
      "pg1vertx",
      "pg5vertx"
    })
    public String topology;

    Redlock redlock;

    @Setup(Level.Trial)
    public void open() {
      redlock = Redlock.builder().nodeUris(uris(topology)).build();
    }

    @TearDown(Level.Trial)
    public void close() {
      redlock.close();
    }
  }

  /**
   * Node URIs of a topology, on the shared servers, with the library's default settings. PostgreSQL
   * nodes are {@code jdbc:postgresql://} URIs ({@code redlock-backend-jdbc}, pgjdbc), or in a
   * topology whose name says {@code vertx}, {@code postgresql://} URIs ({@code
   * redlock-backend-postgres}, Vert.x's reactive client).
   */
  static List<String> uris(String topology) {
    BenchServers servers = BenchServers.get();
    List<String> uris = new ArrayList<>();
    switch (topology) {
      case "redis5" -> servers.redis().forEach(a -> uris.add(redis(a)));
      case "redis1" -> uris.add(redis(servers.redis().get(0)));
      case "redis3pg2" -> {
        servers.redis().subList(0, 3).forEach(a -> uris.add(redis(a)));
        servers.postgres().subList(0, 2).forEach(u -> uris.add(postgresJdbc(u)));
      }
      case "pg1" -> uris.add(postgresJdbc(servers.postgres().get(0)));
      case "pg5" -> servers.postgres().forEach(u -> uris.add(postgresJdbc(u)));
      case "redis3pg2vertx" -> {
        servers.redis().subList(0, 3).forEach(a -> uris.add(redis(a)));
        servers.postgres().subList(0, 2).forEach(u -> uris.add(postgresVertx(u)));
      }
      case "pg1vertx" -> uris.add(postgresVertx(servers.postgres().get(0)));
      case "pg5vertx" -> servers.postgres().forEach(u -> uris.add(postgresVertx(u)));
      case "pg3notify" ->
          servers
              .postgres()
              .subList(0, 3)
              .forEach(u -> uris.add(postgresJdbc(u) + "&redlock.releaseNotifications=true"));
      default -> throw new IllegalArgumentException("unknown topology " + topology);
    }
    return uris;
  }

  private static String redis(String address) {
    return "redis://" + address;
  }

  /**
   * The server's JDBC URL for the JDBC backend (pgjdbc), default settings; only the table is
   * created on first use, for a fresh server.
   */
  private static String postgresJdbc(String jdbcUrl) {
    return jdbcUrl + (jdbcUrl.contains("?") ? "&" : "?") + "redlock.createTable=true";
  }

  /**
   * The same server as a libpq URI ({@code postgresql://user:password@host:port/db}) for the
   * reactive backend, default settings; only the table is created on first use, as for the others.
   */
  static String postgresVertx(String jdbcUrl) {
    return BenchServers.libpqUri(jdbcUrl) + "&redlock.createTable=true";
  }

  /** The benchmark thread's own key. */
  @State(Scope.Thread)
  public static class Key {
    String key;

    @Setup(Level.Trial)
    public void create(ThreadParams thread) {
      key = "bench:redlock:" + thread.getThreadIndex();
    }
  }

  @Benchmark
  public boolean cycle(Quorum quorum, Key key, Recorder recorder) {
    long start = System.nanoTime();
    Optional<Lease> lease = quorum.redlock.tryAcquire(key.key, Workload.TTL);
    long acquired = System.nanoTime() - start;
    if (lease.isEmpty()) {
      recorder.failed();
      return false;
    }
    recorder.acquired(acquired);
    if (!lease.get().release().complete()) {
      recorder.unconfirmed();
    }
    return true;
  }
}
