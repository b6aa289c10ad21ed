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
 * the benchmark thread's own key.
 */
public class RedlockBenchmark {

  /** One Redlock shared by all threads, over the nodes of one topology. */
  @State(Scope.Benchmark)
  public static class Quorum {
    /** Which nodes: see {@link #uris}. */
    @Param({"redis5", "redis1", "redis3pg2", "pg1", "pg5"})
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

  /** Node URIs of a topology, on the shared servers. */
  static List<String> uris(String topology) {
    BenchServers servers = BenchServers.get();
    List<String> uris = new ArrayList<>();
    switch (topology) {
      case "redis5" -> servers.redis().forEach(a -> uris.add(redis(a)));
      case "redis1" -> uris.add(redis(servers.redis().get(0)));
      case "redis3pg2" -> {
        servers.redis().subList(0, 3).forEach(a -> uris.add(redis(a)));
        servers.postgres().subList(0, 2).forEach(u -> uris.add(postgres(u)));
      }
      case "pg1" -> uris.add(postgres(servers.postgres().get(0)));
      case "pg5" -> servers.postgres().forEach(u -> uris.add(postgres(u)));
      case "pg3notify" ->
          servers
              .postgres()
              .subList(0, 3)
              .forEach(u -> uris.add(postgres(u) + "&redlock.releaseNotifications=true"));
      default -> throw new IllegalArgumentException("unknown topology " + topology);
    }
    return uris;
  }

  private static String redis(String address) {
    return "redis://" + address;
  }

  /** The table is created on first use; 8 connections, like the Redis node's default pool. */
  private static String postgres(String jdbcUrl) {
    return jdbcUrl
        + (jdbcUrl.contains("?") ? "&" : "?")
        + "redlock.createTable=true&redlock.poolSize=8";
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
    lease.get().release();
    return true;
  }
}
