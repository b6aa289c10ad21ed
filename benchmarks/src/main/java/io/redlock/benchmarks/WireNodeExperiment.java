package io.redlock.benchmarks;

import io.redlock.Redlock;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.LongUnaryOperator;

/**
 * An experiment: how close does the library come to the mixed quorum's wire floor when its
 * PostgreSQL nodes do not block? Subjects take turns on one thread in slices of cycles, in one JVM,
 * on the same servers; the subject that goes first moves on by one each round of slices, so that
 * none always follows the same other. Each subject's slice is divided by the wire floor's slice of
 * the same round, and the median of these ratios is reported with its quartiles:
 *
 * <ul>
 *   <li>the wire floor ({@link MixedWireFloorBenchmark});
 *   <li>this library over 3 Redis + 2 PostgreSQL nodes given by URI, as users do, with the JDBC
 *       backend's PostgreSQL nodes on pgjdbc, in the order Redis first and PostgreSQL first;
 *   <li>the same, with the PostgreSQL nodes on the JDBC backend's wire-protocol transport ({@code
 *       redlock.wireProtocol=true}: the statement is written when the engine starts the call and
 *       the answer read when it awaits it), again in both orders;
 *   <li>the same nodes with the default transport ({@code redlock.wireProtocol} not set, so {@code
 *       auto}: the wire protocol once its first connection has opened), Redis nodes first.
 * </ul>
 *
 * <p>It measures one thread's wall time per cycle, not JMH's p50 at 1 and 8 threads, and the node
 * order of the list, not an engine that orders nodes itself.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar io.redlock.benchmarks.WireNodeExperiment
 * [--slices 300] [--per 100]} (starts its own servers unless given {@link BenchServers}'
 * properties).
 */
public final class WireNodeExperiment {
  private static final Duration TTL = Workload.TTL;

  private WireNodeExperiment() {}

  public static void main(String[] args) {
    try {
      experiment(args);
    } catch (Exception | Error e) {
      e.printStackTrace();
      System.exit(1);
    }
    System.exit(0); // drivers' non-daemon threads must not keep the JVM (and its servers) alive
  }

  private static void experiment(String[] args) throws Exception {
    int slices = 300;
    int per = 100;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--slices" -> slices = Integer.parseInt(args[++i]);
        case "--per" -> per = Integer.parseInt(args[++i]);
        default ->
            throw new IllegalArgumentException(
                "unknown option " + args[i] + " (use --slices N, --per N)");
      }
    }
    List<String> names = new ArrayList<>();
    List<LongUnaryOperator> subjects = new ArrayList<>();
    List<AutoCloseable> open = new ArrayList<>();
    try {
      // the wire floor's set-up also creates the backend's table on both PostgreSQL servers
      add(names, subjects, "floor: one thread, Jedis + PostgreSQL wire protocol", wireFloor(open));
      List<String> uris = RedlockBenchmark.uris("redis3pg2");
      List<String> pgFirstUris = new ArrayList<>(uris.subList(3, 5));
      pgFirstUris.addAll(uris.subList(0, 3));
      Redlock jdbc = open(open, library(uris));
      Redlock jdbcPgFirst = open(open, library(pgFirstUris));
      Redlock wire = open(open, library(RedlockBenchmark.uris("redis3pg2wire")));
      Redlock wirePgFirst = open(open, library(RedlockBenchmark.uris("pg2wireredis3")));
      List<String> defaultUris =
          uris.stream().map(u -> u.replace("&redlock.wireProtocol=false", "")).toList();
      Redlock byDefault = open(open, library(defaultUris));
      add(names, subjects, "library, JDBC backend, Redis nodes first", cycles(jdbc, "x:1"));
      add(names, subjects, "library, JDBC backend, PostgreSQL first", cycles(jdbcPgFirst, "x:2"));
      add(
          names,
          subjects,
          "library, JDBC backend over the wire protocol, Redis nodes first",
          cycles(wire, "x:3"));
      add(
          names,
          subjects,
          "library, JDBC backend over the wire protocol, PostgreSQL first",
          cycles(wirePgFirst, "x:4"));
      add(
          names,
          subjects,
          "library, JDBC backend with the default transport, Redis nodes first",
          cycles(byDefault, "x:5"));
      run(names, subjects, slices, per);
    } finally {
      for (int i = open.size() - 1; i >= 0; i--) {
        closeQuietly(open.get(i));
      }
    }
  }

  private static void closeQuietly(AutoCloseable resource) {
    try {
      resource.close();
    } catch (Exception e) {
      System.err.println("closing " + resource + " failed: " + e);
    }
  }

  private static void add(
      List<String> names, List<LongUnaryOperator> subjects, String name, LongUnaryOperator s) {
    names.add(name);
    subjects.add(s);
  }

  private static <T extends AutoCloseable> T open(List<AutoCloseable> open, T resource) {
    open.add(resource);
    return resource;
  }

  /** This library through its public API, over nodes given by URI as users give them. */
  private static Redlock library(List<String> uris) {
    return Redlock.builder().nodeUris(uris).build();
  }

  private static LongUnaryOperator wireFloor(List<AutoCloseable> open) throws SQLException {
    MixedWireFloorBenchmark.Nodes nodes = new MixedWireFloorBenchmark.Nodes();
    nodes.open(2_000);
    open.add(nodes::close);
    MixedWireFloorBenchmark bench = new MixedWireFloorBenchmark();
    Recorder idle = new Recorder();
    return n -> {
      long start = System.nanoTime();
      for (long i = 0; i < n; i++) {
        bench.cycle(nodes, idle);
      }
      return System.nanoTime() - start;
    };
  }

  private static LongUnaryOperator cycles(Redlock redlock, String key) {
    return n -> {
      long start = System.nanoTime();
      for (long i = 0; i < n; i++) {
        redlock
            .tryAcquire(key, TTL)
            .orElseThrow(() -> new IllegalStateException("no quorum for " + key))
            .release();
      }
      return System.nanoTime() - start;
    };
  }

  private static void run(
      List<String> names, List<LongUnaryOperator> subjects, int slices, int per) {
    int k = subjects.size();
    long[][] nanos = new long[k][slices];
    int warmup = Math.max(100, slices / 3); // the library needs seconds of C2 compilation
    for (int slice = -warmup; slice < slices; slice++) {
      int first = Math.floorMod(slice, k);
      for (int j = 0; j < k; j++) {
        int s = (first + j) % k;
        long t = subjects.get(s).applyAsLong(per);
        if (slice >= 0) {
          nanos[s][slice] = t;
        }
      }
    }
    System.out.printf(
        Locale.ROOT,
        "%d slices of %d cycles each after %d warm-up slices, who goes first rotating%n",
        slices,
        per,
        warmup);
    System.out.printf(
        Locale.ROOT,
        "| subject | median slice, µs per cycle | ÷ the wire floor's slice of the same round:"
            + " median [p25–p75] |%n");
    System.out.printf(Locale.ROOT, "|---|---:|---:|%n");
    for (int s = 0; s < k; s++) {
      double[] ratios = new double[slices];
      for (int i = 0; i < slices; i++) {
        ratios[i] = (double) nanos[s][i] / nanos[0][i];
      }
      Arrays.sort(ratios);
      System.out.printf(
          Locale.ROOT,
          "| %s | %.1f | %.3f [%.3f–%.3f] |%n",
          names.get(s),
          median(nanos[s]) / per / 1e3,
          ratios[slices / 2],
          ratios[slices / 4],
          ratios[3 * slices / 4]);
    }
  }

  private static double median(long[] values) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }
}
