package io.redlock.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import redis.clients.jedis.Jedis;

/**
 * Runs the whole comparison in one go and prints it as Markdown: starts five Redis and five
 * PostgreSQL servers once, runs every benchmark in several rounds (one JMH fork per benchmark per
 * round, all rounds against the same servers), computes the ratios within each round, and prints
 * medians with their spread over the rounds, the targets (met or not) and the machine's facts.
 *
 * <p>Options: {@code --rounds N} (3), {@code --warmup N} (8 iterations), {@code --redisson-warmup
 * N} (20 iterations for Redisson's subjects), {@code --iterations N} (4), {@code --time MS} (1000
 * per iteration), {@code --threads 1,8}, {@code --only REGEX} (a subset, for a quick look; the
 * table then has gaps), {@code --no-contended}, {@code --no-lifecycle}, {@code --out DIR} ({@code
 * target/bench-results}).
 */
public final class RunAll {
  private static final String UNCONTENDED = "uncontended";
  private static final String CONTENDED = "contended";
  private static final String LIFECYCLE = "lifecycle";
  private static final int CONTENDED_THREADS = 8;

  /**
   * Warm-up iterations by default. Every subject gets the same, and enough for the slowest to warm
   * up: the library over 3 Redis + 2 PostgreSQL runs through many more methods than a floor
   * (engine, pool, executor, pgjdbc) at 2,000-3,000 cycles/s, and its C2 compilations took 6-8 s on
   * 2 cores. With 2 iterations its measurement iterations still fell from 700 to 350 µs within the
   * fork.
   */
  private static final int DEFAULT_WARMUP = 8;

  /**
   * Warm-up iterations of Redisson's subjects by default (never fewer than the others'): at 8
   * threads RedissonRedLock's cycle still fell from 7.5 to 4.4 ms within the measurement of a fork
   * warmed up for 8 s, and a fork warmed up for 30 s was steady at about 4.2 ms from 15 s on. The
   * reference gets every chance to reach its pace. Its subjects run in a JMH run of their own,
   * after this library's subjects of the same round and thread count.
   */
  private static final int DEFAULT_REDISSON_WARMUP = 20;

  /**
   * A fork whose first measurement iteration's mean is this much above its last one's was most
   * likely still warming up (or met a stall); the report names it.
   */
  private static final double STILL_WARMING = 1.25;

  /** A subject of the uncontended table: its label, node count and JMH benchmark key prefix. */
  private record Subject(String label, String nodes, String benchmark) {}

  private static final List<Subject> SUBJECTS =
      List.of(
          new Subject("floor: Jedis sequential", "5 Redis", "RedisFloorBenchmark.sequential"),
          new Subject(
              "floor: Jedis thread per node", "5 Redis", "RedisFloorBenchmark.threadPerNode"),
          new Subject("floor: Jedis multiplexed", "5 Redis", "RedisFloorBenchmark.multiplexed"),
          new Subject(
              "floor: pgjdbc, one connection per thread",
              "1 PostgreSQL",
              "PostgresFloorBenchmark.cycle"),
          new Subject(
              "floor: Vert.x, one connection per thread",
              "1 PostgreSQL",
              "VertxFloorBenchmark.postgres"),
          new Subject(
              "floor: Jedis multiplexed + a pgjdbc thread per node",
              "3 Redis + 2 PostgreSQL",
              "MixedFloorBenchmark.cycle"),
          new Subject(
              "floor: Jedis multiplexed + Vert.x, all five in flight",
              "3 Redis + 2 PostgreSQL",
              "VertxFloorBenchmark.mixed"),
          new Subject("Redisson RLock", "1 Redis", "RedissonBenchmark.lock"),
          new Subject("RedissonRedLock", "5 Redis", "RedissonBenchmark.redLock"),
          new Subject("RedissonMultiLock", "5 Redis", "RedissonBenchmark.multiLock"),
          new Subject("**redlock**", "5 Redis", "RedlockBenchmark.cycle:topology=redis5"),
          new Subject("**redlock**", "1 Redis", "RedlockBenchmark.cycle:topology=redis1"),
          new Subject(
              "**redlock**",
              "3 Redis + 2 PostgreSQL, pgjdbc (`redis3pg2`)",
              "RedlockBenchmark.cycle:topology=redis3pg2"),
          new Subject(
              "**redlock**",
              "3 Redis + 2 PostgreSQL, Vert.x (`redis3pg2vertx`)",
              "RedlockBenchmark.cycle:topology=redis3pg2vertx"),
          new Subject(
              "**redlock**", "1 PostgreSQL, pgjdbc (`pg1`)", "RedlockBenchmark.cycle:topology=pg1"),
          new Subject(
              "**redlock**",
              "1 PostgreSQL, Vert.x (`pg1vertx`)",
              "RedlockBenchmark.cycle:topology=pg1vertx"),
          new Subject(
              "**redlock**", "5 PostgreSQL, pgjdbc (`pg5`)", "RedlockBenchmark.cycle:topology=pg5"),
          new Subject(
              "**redlock**",
              "5 PostgreSQL, Vert.x (`pg5vertx`)",
              "RedlockBenchmark.cycle:topology=pg5vertx"));

  private static final List<Subject> CONTENDED_SUBJECTS =
      List.of(
          new Subject(
              "**redlock**", "5 Redis", "ContendedBenchmark.handOff:subject=redlock-redis5"),
          new Subject(
              "**redlock**",
              "3 Redis + 2 PostgreSQL",
              "ContendedBenchmark.handOff:subject=redlock-redis3pg2"),
          new Subject(
              "**redlock**",
              "3 PostgreSQL, LISTEN/NOTIFY on",
              "ContendedBenchmark.handOff:subject=redlock-pg3notify"),
          new Subject(
              "Redisson RLock", "1 Redis", "ContendedBenchmark.handOff:subject=redisson-lock"),
          new Subject(
              "RedissonRedLock", "5 Redis", "ContendedBenchmark.handOff:subject=redisson-redlock"));

  /**
   * The lease's life beyond acquire + release ({@link LeaseLifecycleBenchmark}), per topology: the
   * plain cycle of that benchmark first, the reference of the others' ratios.
   */
  private static final List<Subject> LIFECYCLE_SUBJECTS = lifecycleSubjects();

  private static List<Subject> lifecycleSubjects() {
    List<Subject> out = new ArrayList<>();
    for (String[] topology :
        new String[][] {{"redis5", "5 Redis"}, {"redis3pg2", "3 Redis + 2 PostgreSQL, pgjdbc"}}) {
      for (String[] method :
          new String[][] {
            {"cycle", "cycle: tryAcquire + release"},
            {"keptAliveCycle", "kept-alive cycle: tryAcquire + keepAlive() + release"},
            {"asyncCycle", "async cycle: tryAcquireAsync + releaseAsync, joined"},
            {"renewal", "renewal: extend of a held lease"},
            {"renewalAsync", "async renewal: extendAsync, joined"}
          }) {
        out.add(
            new Subject(
                method[1],
                topology[1],
                "LeaseLifecycleBenchmark." + method[0] + ":topology=" + topology[0]));
      }
    }
    return List.copyOf(out);
  }

  private static final String MUX = "RedisFloorBenchmark.multiplexed";
  private static final String REDLOCK5 = "RedlockBenchmark.cycle:topology=redis5";
  private static final String RED_LOCK = "RedissonBenchmark.redLock";
  private static final String PG_FLOOR = "PostgresFloorBenchmark.cycle";
  private static final String MIXED_FLOOR = "MixedFloorBenchmark.cycle";
  private static final String VERTX_MIXED_FLOOR = "VertxFloorBenchmark.mixed";

  /** The library on one PostgreSQL node: its targets are against {@link #PG_FLOOR}. */
  private static final List<String> SINGLE_PG =
      List.of("RedlockBenchmark.cycle:topology=pg1", "RedlockBenchmark.cycle:topology=pg1vertx");

  /** The library on 3 Redis + 2 PostgreSQL: its targets are against both mixed floors. */
  private static final List<String> MIXED =
      List.of(
          "RedlockBenchmark.cycle:topology=redis3pg2",
          "RedlockBenchmark.cycle:topology=redis3pg2vertx");

  /** Thread count and cycles of the "no failed or unconfirmed release" target. */
  private static final int RELIABILITY_THREADS = 8;

  private static final long RELIABILITY_CYCLES = 10_000;

  /** One benchmark's figures in one round. Latencies in microseconds. */
  record Figures(
      int threads,
      double meanUs,
      double p50Us,
      double p99Us,
      double bytesPerOp,
      double firstToLast,
      Properties recorded) {
    double opsPerSecond() {
      return threads * 1e6 / meanUs;
    }

    double recorded(String name) {
      String v = recorded.getProperty(name);
      return v == null ? Double.NaN : Double.parseDouble(v);
    }
  }

  private final int rounds;
  private final int warmup;
  private final int redissonWarmup;
  private final int iterations;
  private final int timeMillis;
  private final List<Integer> threads;
  private final String only;
  private final boolean contended;
  private final boolean lifecycle;
  private final Path out;

  /** round -> key -> figures */
  private final List<Map<String, Figures>> results = new ArrayList<>();

  private RunAll(Map<String, String> options) {
    this.rounds = Integer.parseInt(options.getOrDefault("rounds", "3"));
    this.warmup = Integer.parseInt(options.getOrDefault("warmup", String.valueOf(DEFAULT_WARMUP)));
    this.redissonWarmup =
        Integer.parseInt(
            options.getOrDefault("redisson-warmup", String.valueOf(DEFAULT_REDISSON_WARMUP)));
    this.iterations = Integer.parseInt(options.getOrDefault("iterations", "4"));
    this.timeMillis = Integer.parseInt(options.getOrDefault("time", "1000"));
    this.threads =
        List.of(options.getOrDefault("threads", "1,8").split(",")).stream()
            .map(String::strip)
            .map(Integer::parseInt)
            .toList();
    this.only = options.get("only");
    this.contended = !options.containsKey("no-contended");
    this.lifecycle = !options.containsKey("no-lifecycle");
    this.out = Path.of(options.getOrDefault("out", "target/bench-results")).toAbsolutePath();
  }

  /** Runs everything; see the class comment for the options. */
  public static void main(String[] args) throws Exception {
    Map<String, String> options = parse(args);
    RunAll run = new RunAll(options);
    run.run();
  }

  private static final List<String> OPTIONS =
      List.of(
          "rounds",
          "warmup",
          "redisson-warmup",
          "iterations",
          "time",
          "threads",
          "only",
          "no-contended",
          "no-lifecycle",
          "out");

  private static Map<String, String> parse(String[] args) {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--")) {
        throw new IllegalArgumentException(
            "unexpected argument '" + a + "'; options start with --");
      }
      String name = a.substring(2);
      if (!OPTIONS.contains(name)) {
        throw new IllegalArgumentException(
            "unknown option --" + name + "; the options are --" + String.join(", --", OPTIONS));
      }
      if (name.equals("no-contended") || name.equals("no-lifecycle")) {
        options.put(name, "true");
      } else if (i + 1 < args.length) {
        options.put(name, args[++i]);
      } else {
        throw new IllegalArgumentException("option --" + name + " needs a value");
      }
    }
    return options;
  }

  private void run() throws IOException, RunnerException {
    Files.createDirectories(out);
    long started = System.nanoTime();
    String loadBefore = loadAverage();
    log("starting 5 Redis and 5 PostgreSQL servers (shared by every benchmark of this run)");
    try (BenchServers servers = BenchServers.start()) {
      log("servers: redis " + servers.redis() + ", postgres on " + servers.postgres().size());
      String facts = machineFacts(servers);
      for (int round = 1; round <= rounds; round++) {
        Map<String, Figures> figures = new LinkedHashMap<>();
        Path roundDir = out.resolve("round-" + round);
        for (int t : threads) {
          runJmh(servers, round, roundDir, UNCONTENDED, t, figures);
        }
        if (contended) {
          runJmh(servers, round, roundDir, CONTENDED, CONTENDED_THREADS, figures);
        }
        if (lifecycle) {
          for (int t : threads) {
            runJmh(servers, round, roundDir, LIFECYCLE, t, figures);
          }
        }
        results.add(figures);
      }
      long minutes = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
      String report = report(facts, loadBefore, loadAverage(), minutes);
      Files.writeString(out.resolve("results.md"), report);
      System.out.println(report);
      log("table written to " + out.resolve("results.md"));
    }
  }

  private void runJmh(
      BenchServers servers,
      int round,
      Path roundDir,
      String include,
      int threadCount,
      Map<String, Figures> into)
      throws RunnerException {
    List<Subject> subjects =
        switch (include) {
          case CONTENDED -> CONTENDED_SUBJECTS;
          case LIFECYCLE -> LIFECYCLE_SUBJECTS;
          default -> SUBJECTS;
        };
    if (only != null) {
      Pattern p = Pattern.compile(only);
      subjects = subjects.stream().filter(s -> p.matcher(s.benchmark()).find()).toList();
    }
    for (boolean ofRedisson : new boolean[] {false, true}) {
      List<Subject> group = subjects.stream().filter(s -> isRedisson(s) == ofRedisson).toList();
      if (!group.isEmpty()) {
        int warmupIterations = ofRedisson ? Math.max(warmup, redissonWarmup) : warmup;
        String logSuffix = ofRedisson ? "-redisson" : "";
        runGroup(
            servers,
            round,
            roundDir,
            include,
            threadCount,
            group,
            warmupIterations,
            logSuffix,
            into);
      }
    }
  }

  /** Redisson's subjects, which warm up more slowly (see {@link #DEFAULT_REDISSON_WARMUP}). */
  private static boolean isRedisson(Subject s) {
    return s.benchmark().startsWith("RedissonBenchmark.") || s.benchmark().contains("=redisson-");
  }

  /** One JMH run of a group of subjects that share their warm-up (one fork each). */
  private void runGroup(
      BenchServers servers,
      int round,
      Path roundDir,
      String include,
      int threadCount,
      List<Subject> subjects,
      int warmupIterations,
      String logSuffix,
      Map<String, Figures> into)
      throws RunnerException {
    // one include per benchmark method, and the parameter values of the chosen subjects
    List<String> methods = new ArrayList<>();
    Map<String, List<String>> params = new LinkedHashMap<>();
    for (Subject s : subjects) {
      String[] parts = s.benchmark().split(":");
      String method = "^io\\.redlock\\.benchmarks\\." + parts[0].replace(".", "\\.") + "$";
      if (!methods.contains(method)) {
        methods.add(method);
      }
      for (int i = 1; i < parts.length; i++) {
        String[] kv = parts[i].split("=", 2);
        List<String> values = params.computeIfAbsent(kv[0], k -> new ArrayList<>());
        if (!values.contains(kv[1])) {
          values.add(kv[1]); // once, or JMH would run it once per subject that names it
        }
      }
    }
    Path logFile =
        out.resolve(
            "jmh-round"
                + round
                + "-"
                + (include.equals(CONTENDED)
                    ? "contended"
                    : (include.equals(LIFECYCLE) ? "lifecycle-t" : "t") + threadCount)
                + logSuffix
                + ".log");
    log(
        "round "
            + round
            + "/"
            + rounds
            + ": "
            + include
            + ", "
            + threadCount
            + " thread(s), "
            + warmupIterations
            + " warm-up iterations; JMH log: "
            + logFile);
    List<String> jvmArgs = new ArrayList<>(servers.asJvmArgs());
    jvmArgs.add("-D" + Recorder.OUT_PROPERTY + "=" + roundDir);
    jvmArgs.add("-Xms1g");
    jvmArgs.add("-Xmx1g");
    ChainedOptionsBuilder options =
        new OptionsBuilder()
            .mode(Mode.SampleTime)
            .timeUnit(TimeUnit.MICROSECONDS)
            .warmupIterations(warmupIterations)
            .warmupTime(TimeValue.milliseconds(timeMillis))
            .measurementIterations(iterations)
            .measurementTime(TimeValue.milliseconds(timeMillis))
            .forks(1)
            .threads(threadCount)
            .addProfiler(GCProfiler.class)
            .jvmArgsAppend(jvmArgs.toArray(String[]::new))
            .shouldFailOnError(false)
            .output(logFile.toString());
    methods.forEach(options::include);
    params.forEach((k, v) -> options.param(k, v.toArray(String[]::new)));
    Collection<RunResult> runResults = new Runner(options.build()).run();
    for (RunResult r : runResults) {
      String key = Recorder.key(r.getParams());
      Result<?> primary = r.getPrimaryResult();
      double norm = Double.NaN;
      for (String label : r.getSecondaryResults().keySet()) {
        if (label.endsWith("gc.alloc.rate.norm")) {
          norm = r.getSecondaryResults().get(label).getScore();
        }
      }
      Properties recorded = Recorder.read(roundDir.resolve(Recorder.fileName(key)));
      double firstToLast = firstToLast(r);
      into.put(
          key,
          new Figures(
              r.getParams().getThreads(),
              primary.getScore(),
              primary.getStatistics().getPercentile(50),
              primary.getStatistics().getPercentile(99),
              norm,
              firstToLast,
              recorded));
      log(
          String.format(
              Locale.ROOT,
              "  %-60s %10.0f ops/s  p50 %8.1f us  p99 %8.1f us  %6.0f B/op%s",
              key,
              r.getParams().getThreads() * 1e6 / primary.getScore(),
              primary.getStatistics().getPercentile(50),
              primary.getStatistics().getPercentile(99),
              norm,
              firstToLast >= STILL_WARMING
                  ? String.format(
                      Locale.ROOT,
                      "  (warm-up or a stall? first/last measurement iteration %.2f)",
                      firstToLast)
                  : ""));
    }
  }

  /**
   * The mean of a fork's first measurement iteration over its last one's: well above 1 when the
   * fork was still warming up while measured. NaN with fewer than two iterations. JMH keeps only
   * measurement iterations in its results; with more than one fork this would compare the first
   * fork's first iteration with the last fork's last (the run uses one fork).
   */
  private static double firstToLast(RunResult r) {
    List<Double> means = new ArrayList<>();
    for (BenchmarkResult b : r.getBenchmarkResults()) {
      for (IterationResult i : b.getIterationResults()) {
        means.add(i.getPrimaryResult().getScore());
      }
    }
    return means.size() < 2 ? Double.NaN : means.get(0) / means.get(means.size() - 1);
  }

  // ---------------------------------------------------------------------------------------------
  // The report

  private String report(String facts, String loadBefore, String loadAfter, long seconds) {
    StringBuilder sb = new StringBuilder();
    sb.append("### Uncontended: acquire + release on distinct keys\n\n");
    sb.append(
        "| subject | nodes | threads | cycles/s, median [min–max] | cycle p50 µs | cycle p99 µs"
            + " | acquire p50 µs | acquire p99 µs | bytes/cycle"
            + " | failed acquires / unconfirmed releases, in cycles | × multiplexed floor"
            + " | × RedissonRedLock |\n");
    sb.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    List<String> notes = new ArrayList<>();
    for (int t : threads) {
      for (Subject s : SUBJECTS) {
        String key = s.benchmark() + ":threads=" + t;
        if (!present(key)) {
          continue;
        }
        sb.append("| ")
            .append(s.label())
            .append(" | ")
            .append(s.nodes())
            .append(" | ")
            .append(t)
            .append(" | ")
            .append(spread(values(key, Figures::opsPerSecond), "%,.0f"))
            .append(" | ")
            .append(num(median(values(key, Figures::p50Us)), "%,.0f"))
            .append(" | ")
            .append(num(median(values(key, Figures::p99Us)), "%,.0f"))
            .append(" | ")
            .append(num(median(values(key, f -> f.recorded("acquire.p50"))), "%,.0f"))
            .append(" | ")
            .append(num(median(values(key, f -> f.recorded("acquire.p99"))), "%,.0f"))
            .append(" | ")
            .append(num(median(values(key, Figures::bytesPerOp)), "%,.0f"))
            .append(" | ")
            .append(isLibrary(s) ? failures(key, "") : "–")
            .append(" | ")
            .append(spread(ratios(key, MUX + ":threads=" + t, Figures::opsPerSecond), "%.2f"))
            .append(" | ")
            .append(spread(ratios(key, RED_LOCK + ":threads=" + t, Figures::opsPerSecond), "%.2f"))
            .append(" |\n");
        double warmupTroubles =
            sum(values(key, f -> f.recorded("warmup.failures")))
                + sum(values(key, f -> f.recorded("warmup.unconfirmed")));
        if (isLibrary(s) && warmupTroubles > 0) {
          notes.add(
              s.label()
                  + " on "
                  + s.nodes()
                  + ", "
                  + t
                  + " thread(s), in warm-up iterations (not measured): "
                  + failures(key, "warmup."));
        }
      }
    }
    for (String note : notes) {
      sb.append("\n- ").append(note);
    }
    if (!notes.isEmpty()) {
      sb.append('\n');
    }
    if (contended) {
      sb.append("\n### Contended: ")
          .append(CONTENDED_THREADS)
          .append(" threads, one key, acquire (waiting up to ")
          .append(Workload.CONTENDED_MAX_WAIT.toSeconds())
          .append(" s) then release at once\n\n");
      sb.append(
          "| subject | nodes | grants/s, median [min–max] | hand-offs to another client/s"
              + " | release → next grant p50 / p99 ms | release → grant to another client"
              + " p50 / p99 ms | acquire wait p99 ms | starved (no grant in "
              + Workload.CONTENDED_MAX_WAIT.toSeconds()
              + " s) |\n");
      sb.append("|---|---|---:|---:|---:|---:|---:|---:|\n");
      double measuredSeconds = iterations * timeMillis / 1000.0;
      for (Subject s : CONTENDED_SUBJECTS) {
        String key = s.benchmark() + ":threads=" + CONTENDED_THREADS;
        if (!present(key)) {
          continue;
        }
        sb.append("| ")
            .append(s.label())
            .append(" | ")
            .append(s.nodes())
            .append(" | ")
            .append(
                spread(values(key, f -> f.recorded("acquire.count") / measuredSeconds), "%,.0f"))
            .append(" | ")
            .append(
                num(median(values(key, f -> f.recorded("handoffs") / measuredSeconds)), "%,.1f"))
            .append(" | ")
            .append(num(median(values(key, f -> f.recorded("gap.p50") / 1e3)), "%.2f"))
            .append(" / ")
            .append(num(median(values(key, f -> f.recorded("gap.p99") / 1e3)), "%.2f"))
            .append(" | ")
            .append(num(median(values(key, f -> f.recorded("handoff.p50") / 1e3)), "%.2f"))
            .append(" / ")
            .append(num(median(values(key, f -> f.recorded("handoff.p99") / 1e3)), "%.2f"))
            .append(" | ")
            .append(num(median(values(key, f -> f.recorded("acquire.p99") / 1e3)), "%.1f"))
            .append(" | ")
            .append(num(sum(values(key, f -> f.recorded("failures"))), "%.0f"))
            .append(" |\n");
      }
    }
    if (lifecycle) {
      lifecycleTable(sb);
    }
    sb.append(
        "\n### Targets (ratios computed within each round; median [min–max] over rounds)\n\n");
    sb.append("| target | measured | met |\n|---|---:|---|\n");
    for (int t : threads) {
      String lib = REDLOCK5 + ":threads=" + t;
      target(
          sb,
          "5 Redis: cycles/s ≥ 0.9 × multiplexed floor, " + t + " thread(s)",
          ratios(lib, MUX + ":threads=" + t, Figures::opsPerSecond),
          r -> r >= 0.9);
      target(
          sb,
          "5 Redis: cycles/s ≥ 5 × RedissonRedLock, " + t + " thread(s)",
          ratios(lib, RED_LOCK + ":threads=" + t, Figures::opsPerSecond),
          r -> r >= 5);
      target(
          sb,
          "5 Redis: cycle p99 ≤ multiplexed floor's p99, " + t + " thread(s)",
          ratios(lib, MUX + ":threads=" + t, Figures::p99Us),
          r -> r <= 1.0);
    }
    for (String subject : SINGLE_PG) {
      floorTargets(sb, subject, PG_FLOOR, "the single-connection pgjdbc floor", 0.95);
    }
    for (String subject : MIXED) {
      floorTargets(sb, subject, MIXED_FLOOR, "the pgjdbc-thread mixed floor", 1.0);
      floorTargets(sb, subject, VERTX_MIXED_FLOOR, "the Vert.x mixed floor", 1.0);
    }
    for (Subject s : SUBJECTS) {
      if (isLibrary(s)) {
        reliabilityTarget(sb, s);
      }
    }
    for (int t : threads) {
      List<Double> lib = values(REDLOCK5 + ":threads=" + t, Figures::bytesPerOp);
      List<Double> floor = values(MUX + ":threads=" + t, Figures::bytesPerOp);
      if (!lib.isEmpty()) {
        sb.append("| 5 Redis: bytes allocated per cycle, ")
            .append(t)
            .append(" thread(s) (multiplexed floor: ")
            .append(num(median(floor), "%,.0f"))
            .append(") | ")
            .append(spread(lib, "%,.0f"))
            .append(" | stated, see below |\n");
      }
    }
    if (contended) {
      String key = CONTENDED_SUBJECTS.get(0).benchmark() + ":threads=" + CONTENDED_THREADS;
      target(
          sb,
          "Contended, 5 Redis: release → grant to another client within 5 ms, p50",
          values(key, f -> f.recorded("handoff.p50") / 1e3),
          ms -> ms <= 5);
      target(
          sb,
          "Contended, 5 Redis: release → grant to another client within 5 ms, p99",
          values(key, f -> f.recorded("handoff.p99") / 1e3),
          ms -> ms <= 5);
    }
    sb.append("\nRatios are this library ÷ the reference (for p99: lower is better).")
        .append(" Bytes per cycle: JMH's GC profiler (`gc.alloc.rate.norm`), all threads of the")
        .append(" benchmark JVM, drivers included. Failed acquires / unconfirmed releases (a")
        .append(" release's `ReleaseOutcome` not `complete()`: some node did not answer): this")
        .append(" library's subjects, measurement iterations of all rounds; a floor or Redisson")
        .append(" cycle that fails throws, which ends its fork.\n");
    sb.append("\n### How it ran\n\n");
    sb.append(facts);
    sb.append("- settings: ")
        .append(rounds)
        .append(" round(s); per benchmark and round one JMH fork, ")
        .append(warmup)
        .append(" warm-up (Redisson's subjects: ")
        .append(Math.max(warmup, redissonWarmup))
        .append(") + ")
        .append(iterations)
        .append(" measurement iterations of ")
        .append(timeMillis)
        .append(" ms, Mode.SampleTime, -prof gc, fork heap 1 GiB; TTL ")
        .append(Workload.TTL.toSeconds())
        .append(" s, library and Redisson defaults otherwise\n");
    sb.append("- forks whose first measurement iteration was ≥ ")
        .append(STILL_WARMING)
        .append(" × their last (still warming up, or a stall): ")
        .append(stillWarming())
        .append('\n');
    sb.append("- load average before / after: ")
        .append(loadBefore)
        .append(" / ")
        .append(loadAfter)
        .append(" (the machine is shared: other processes ran too)\n");
    sb.append("- whole run: ")
        .append(seconds / 60)
        .append(" min ")
        .append(seconds % 60)
        .append(" s\n");
    return sb.toString();
  }

  /**
   * The lease's life beyond acquire + release: every case of {@link LeaseLifecycleBenchmark} with
   * its ratio to the plain cycle of the same topology and thread count, computed within each round.
   * For a renewal the "failed" count is its refused extends, and its "ops" are extends.
   */
  private void lifecycleTable(StringBuilder sb) {
    sb.append("\n### Lease lifecycle: keep-alive, renewal and the async path, distinct keys\n\n");
    sb.append(
        "| case | nodes | threads | ops/s, median [min–max] | p50 µs | p99 µs | bytes/op"
            + " | failed / unconfirmed, in ops | ops/s × cycle | p50 × cycle |\n");
    sb.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int t : threads) {
      for (Subject s : LIFECYCLE_SUBJECTS) {
        String key = s.benchmark() + ":threads=" + t;
        if (!present(key)) {
          continue;
        }
        String cycle =
            "LeaseLifecycleBenchmark.cycle:"
                + s.benchmark().substring(s.benchmark().indexOf(':') + 1)
                + ":threads="
                + t;
        boolean isCycle = key.equals(cycle);
        sb.append("| ")
            .append(s.label())
            .append(" | ")
            .append(s.nodes())
            .append(" | ")
            .append(t)
            .append(" | ")
            .append(spread(values(key, Figures::opsPerSecond), "%,.0f"))
            .append(" | ")
            .append(num(median(values(key, Figures::p50Us)), "%,.0f"))
            .append(" | ")
            .append(num(median(values(key, Figures::p99Us)), "%,.0f"))
            .append(" | ")
            .append(num(median(values(key, Figures::bytesPerOp)), "%,.0f"))
            .append(" | ")
            .append(failures(key, ""))
            .append(" | ")
            .append(isCycle ? "1" : spread(ratios(key, cycle, Figures::opsPerSecond), "%.2f"))
            .append(" | ")
            .append(isCycle ? "1" : spread(ratios(key, cycle, Figures::p50Us), "%.2f"))
            .append(" |\n");
      }
    }
    sb.append(
            "\nRatios to the plain cycle of the same topology and thread count, in the same round.")
        .append(" A renewal is one extend of a lease held across the iteration (what keep-alive")
        .append(" sends every third of the TTL); its failed count is refused extends. The async")
        .append(" cases run on the Redlock's scheduler threads (as many as cores, at least 2).\n");
  }

  /**
   * The targets of one subject against one floor, at every thread count: cycles/s at least {@code
   * minThroughput} × the floor's, cycle p99 at most 1.2 × the floor's.
   */
  private void floorTargets(
      StringBuilder sb, String subject, String floor, String floorName, double minThroughput) {
    String name = label(subject);
    for (int t : threads) {
      target(
          sb,
          name + ": cycles/s ≥ " + minThroughput + " × " + floorName + ", " + t + " thread(s)",
          ratios(subject + ":threads=" + t, floor + ":threads=" + t, Figures::opsPerSecond),
          r -> r >= minThroughput);
    }
    for (int t : threads) {
      target(
          sb,
          name + ": cycle p99 ≤ 1.2 × " + floorName + "'s, " + t + " thread(s)",
          ratios(subject + ":threads=" + t, floor + ":threads=" + t, Figures::p99Us),
          r -> r <= 1.2);
    }
  }

  /**
   * No failed acquire and no unconfirmed release at {@link #RELIABILITY_THREADS} threads, over the
   * measurement iterations of all rounds, which must add up to {@link #RELIABILITY_CYCLES} cycles
   * at least. Only for subjects that ran.
   */
  private void reliabilityTarget(StringBuilder sb, Subject s) {
    String key = s.benchmark() + ":threads=" + RELIABILITY_THREADS;
    if (!present(key)) {
      return;
    }
    double troubles =
        sum(values(key, f -> f.recorded("failures")))
            + sum(values(key, f -> f.recorded("unconfirmed")));
    double cycles = sum(values(key, f -> f.recorded("cycles")));
    String met;
    if (troubles > 0) {
      met = "**no**";
    } else if (cycles >= RELIABILITY_CYCLES) {
      met = "**yes**";
    } else {
      met = String.format(Locale.ROOT, "not measured (fewer than %,d cycles)", RELIABILITY_CYCLES);
    }
    sb.append("| ")
        .append(label(s.benchmark()))
        .append(": no failed acquire or unconfirmed release in ")
        .append(String.format(Locale.ROOT, "%,d", RELIABILITY_CYCLES))
        .append(" cycles or more, ")
        .append(RELIABILITY_THREADS)
        .append(" threads (all rounds) | ")
        .append(failures(key, ""))
        .append(" | ")
        .append(met)
        .append(" |\n");
  }

  /** "F / U in N": failed acquires, unconfirmed releases and cycles of all rounds. */
  private String failures(String key, String prefix) {
    return String.format(
        Locale.ROOT,
        "%,.0f / %,.0f in %,.0f",
        sum(values(key, f -> f.recorded(prefix + "failures"))),
        sum(values(key, f -> f.recorded(prefix + "unconfirmed"))),
        sum(values(key, f -> f.recorded(prefix + "cycles"))));
  }

  /** A library subject's name for the targets: its nodes, e.g. "1 PostgreSQL, pgjdbc (`pg1`)". */
  private static String label(String benchmark) {
    return SUBJECTS.stream()
        .filter(s -> s.benchmark().equals(benchmark))
        .map(Subject::nodes)
        .findFirst()
        .orElse(benchmark);
  }

  /** This library's subjects, the only ones that count failed acquires and releases. */
  private static boolean isLibrary(Subject s) {
    return s.benchmark().startsWith("RedlockBenchmark.");
  }

  /** The forks whose first measurement iteration was well above their last, or "none". */
  private String stillWarming() {
    List<String> found = new ArrayList<>();
    for (int round = 0; round < results.size(); round++) {
      for (Map.Entry<String, Figures> e : results.get(round).entrySet()) {
        double ratio = e.getValue().firstToLast();
        if (ratio >= STILL_WARMING) {
          found.add(
              String.format(Locale.ROOT, "%s in round %d (%.2f)", e.getKey(), round + 1, ratio));
        }
      }
    }
    return found.isEmpty() ? "none" : String.join("; ", found);
  }

  private interface Metric {
    double of(Figures f);
  }

  private interface Check {
    boolean met(double value);
  }

  private boolean present(String key) {
    return results.stream().anyMatch(r -> r.containsKey(key));
  }

  private List<Double> values(String key, Metric metric) {
    List<Double> out = new ArrayList<>();
    for (Map<String, Figures> round : results) {
      Figures f = round.get(key);
      if (f != null) {
        double v = metric.of(f);
        if (!Double.isNaN(v)) {
          out.add(v);
        }
      }
    }
    return out;
  }

  /** The ratio of two benchmarks within each round where both ran. */
  private List<Double> ratios(String key, String reference, Metric metric) {
    List<Double> out = new ArrayList<>();
    for (Map<String, Figures> round : results) {
      Figures a = round.get(key);
      Figures b = round.get(reference);
      if (a != null && b != null) {
        out.add(metric.of(a) / metric.of(b));
      }
    }
    return out;
  }

  private static void target(StringBuilder sb, String name, List<Double> values, Check check) {
    double m = median(values);
    String met;
    if (values.isEmpty()) {
      met = "not measured";
    } else if (values.stream().allMatch(check::met)) {
      met = "**yes**";
    } else if (check.met(m)) {
      met = "yes (median; not in every round)";
    } else {
      met = "**no**";
    }
    sb.append("| ")
        .append(name)
        .append(" | ")
        .append(spread(values, "%.2f"))
        .append(" | ")
        .append(met)
        .append(" |\n");
  }

  static double median(List<Double> values) {
    if (values.isEmpty()) {
      return Double.NaN;
    }
    List<Double> sorted = values.stream().sorted().toList();
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  private static double sum(List<Double> values) {
    return values.stream().mapToDouble(Double::doubleValue).sum();
  }

  private static String spread(List<Double> values, String format) {
    if (values.isEmpty()) {
      return "–";
    }
    String m = num(median(values), format);
    if (values.size() == 1) {
      return m;
    }
    double min = values.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
    double max = values.stream().mapToDouble(Double::doubleValue).max().orElseThrow();
    return m + " [" + num(min, format) + "–" + num(max, format) + "]";
  }

  private static String num(double value, String format) {
    return Double.isNaN(value) ? "–" : String.format(Locale.ROOT, format, value);
  }

  // ---------------------------------------------------------------------------------------------
  // Machine facts

  private static String machineFacts(BenchServers servers) {
    StringBuilder sb = new StringBuilder();
    sb.append("- machine: ")
        .append(Runtime.getRuntime().availableProcessors())
        .append(" CPUs (")
        .append(cpuModel())
        .append("), ")
        .append(memory())
        .append(" RAM, ")
        .append(System.getProperty("os.name"))
        .append(' ')
        .append(System.getProperty("os.version"))
        .append('\n');
    sb.append("- JDK: ")
        .append(System.getProperty("java.vm.name"))
        .append(' ')
        .append(System.getProperty("java.runtime.version"))
        .append('\n');
    sb.append("- servers (all on loopback, started once for the run): 5 × Redis ")
        .append(redisVersion(servers.redis().get(0)))
        .append(" (no persistence), 5 × ")
        .append(postgresVersion(servers.postgres().get(0)))
        .append(" (fsync=off, synchronous_commit=off)\n");
    sb.append("- clients: Jedis ")
        .append(version(redis.clients.jedis.Jedis.class))
        .append(", Redisson ")
        .append(version(org.redisson.Redisson.class))
        .append(", PgJDBC ")
        .append(org.postgresql.util.DriverInfo.DRIVER_VERSION)
        .append(", Vert.x ")
        .append(version(io.vertx.core.Vertx.class))
        .append(", JMH ")
        .append(version(Runner.class))
        .append('\n');
    sb.append("- when: ").append(Instant.now()).append('\n');
    return sb.toString();
  }

  private static String version(Class<?> type) {
    String v = type.getPackage().getImplementationVersion();
    if (v != null) {
      return v;
    }
    // the uber jar drops manifests: fall back to the Maven metadata the jars carry
    String name = type.getName();
    String file =
        name.startsWith("redis.")
            ? "META-INF/maven/redis.clients/jedis/pom.properties"
            : name.startsWith("org.redisson")
                ? "META-INF/maven/org.redisson/redisson/pom.properties"
                : name.startsWith("io.vertx")
                    ? "META-INF/maven/io.vertx/vertx-core/pom.properties"
                    : "META-INF/maven/org.openjdk.jmh/jmh-core/pom.properties";
    try (var in = RunAll.class.getClassLoader().getResourceAsStream(file)) {
      if (in != null) {
        Properties p = new Properties();
        p.load(in);
        return p.getProperty("version", "?");
      }
    } catch (IOException e) {
      // unknown
    }
    return "?";
  }

  private static String cpuModel() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        if (line.startsWith("model name")) {
          return line.substring(line.indexOf(':') + 1).strip();
        }
      }
    } catch (IOException | UncheckedIOException e) {
      // not Linux
    }
    return System.getProperty("os.arch");
  }

  private static String memory() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
        if (line.startsWith("MemTotal:")) {
          long kb = Long.parseLong(line.replaceAll("[^0-9]", ""));
          return String.format(Locale.ROOT, "%.1f GiB", kb / 1024.0 / 1024.0);
        }
      }
    } catch (IOException | UncheckedIOException e) {
      // not Linux
    }
    return "? GiB";
  }

  private static String loadAverage() {
    try {
      String[] parts = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return parts[0] + " " + parts[1] + " " + parts[2];
    } catch (IOException | UncheckedIOException e) {
      return "?";
    }
  }

  private static String redisVersion(String address) {
    try (Jedis jedis = new Jedis(BenchServers.host(address), BenchServers.port(address))) {
      for (String line : jedis.info("server").split("\r?\n")) {
        if (line.startsWith("redis_version:")) {
          return line.substring("redis_version:".length()).strip();
        }
      }
    } catch (RuntimeException e) {
      // fall through
    }
    return "?";
  }

  private static String postgresVersion(String url) {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW server_version")) {
      return rs.next() ? "PostgreSQL " + rs.getString(1).split(" ")[0] : "PostgreSQL ?";
    } catch (SQLException e) {
      return "PostgreSQL ?";
    }
  }

  private static void log(String message) {
    System.err.println("[bench] " + message);
  }
}
