package io.redlock.cli.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.redlock.Lease;
import io.redlock.Redlock;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code redlock bench}: acquire/release cycles against the configured quorum, reporting throughput
 * and latency percentiles. A progress bar is drawn on stderr when it is a terminal.
 */
@Command(
    name = "bench",
    sortOptions = false,
    usageHelpAutoWidth = true,
    mixinStandardHelpOptions = true,
    description = {
      "Measures acquire + release cycles against the configured nodes: throughput and latency"
          + " percentiles of acquire, release and the whole cycle.",
      "Each thread locks its own key (uncontended) unless --contended is given, in which case all"
          + " threads fight for one key.",
      "'not acquired' counts attempts that found the key held or got too few answers within the"
          + " per-node timeout (a loaded machine or slow nodes; see redlock doctor).",
      "Acquisitions make a single attempt each (no retry pause), so the figures are the quorum's"
          + " own round trips."
    })
final class BenchCommand implements Callable<Integer> {
  @Option(
      names = "--ops",
      defaultValue = "1000",
      paramLabel = "N",
      description = "Cycles to run, over all threads. Default: ${DEFAULT-VALUE}.")
  long ops;

  @Option(
      names = "--duration",
      converter = Durations.class,
      paramLabel = "DURATION",
      description = "Run for this long instead of a number of cycles.")
  Duration duration;

  @Option(
      names = "--threads",
      defaultValue = "1",
      paramLabel = "N",
      description = "Concurrent clients in this process. Default: ${DEFAULT-VALUE}.")
  int threads;

  @Option(
      names = "--warmup",
      defaultValue = "20",
      paramLabel = "N",
      description = "Cycles per thread before measuring. Default: ${DEFAULT-VALUE}.")
  int warmup;

  @Option(
      names = "--ttl",
      defaultValue = "10s",
      converter = Durations.class,
      paramLabel = "DURATION",
      description = "TTL of each lock. Default: ${DEFAULT-VALUE}.")
  Duration ttl;

  @Option(names = "--contended", description = "All threads use one key.")
  boolean contended;

  @Option(names = "--json", description = "Print JSON instead of text.")
  boolean json;

  @Mixin NodeOptions nodeOptions;

  /** Latency percentiles of one operation, in milliseconds. */
  record Latency(
      long count,
      double p50Ms,
      double p90Ms,
      double p99Ms,
      double p999Ms,
      double maxMs,
      double meanMs) {
    static Latency of(Samples s) {
      return new Latency(
          s.size(),
          Durations.millis(s.percentile(50)),
          Durations.millis(s.percentile(90)),
          Durations.millis(s.percentile(99)),
          Durations.millis(s.percentile(99.9)),
          Durations.millis(s.max()),
          Durations.millis((long) s.meanNanos()));
    }
  }

  record Result(
      String nodesFrom,
      int nodes,
      int threads,
      boolean contended,
      double ttlMs,
      double nodeTimeoutMs,
      long cycles,
      long acquired,
      long notAcquired,
      double seconds,
      double cyclesPerSecond,
      Latency acquire,
      Latency release,
      Latency cycle) {}

  /** One thread's measurements. */
  private static final class Worker {
    final Samples acquire = new Samples();
    final Samples release = new Samples();
    final Samples cycle = new Samples();
    long acquired;
    long notAcquired;
    RuntimeException failure;
  }

  @Override
  public Integer call() throws Exception {
    if (threads < 1 || threads > 256) {
      throw new CliException(
          ExitCodes.USAGE, "--threads must be between 1 and 256, got " + threads);
    }
    if (duration == null && (ops < 1 || ops > 10_000_000)) {
      throw new CliException(ExitCodes.USAGE, "--ops must be between 1 and 10,000,000, got " + ops);
    }
    if (duration != null && (duration.isNegative() || duration.isZero())) {
      throw new CliException(ExitCodes.USAGE, "--duration must be positive");
    }
    if (warmup < 0) {
      throw new CliException(ExitCodes.USAGE, "--warmup must not be negative");
    }
    PrintStream out = System.out;
    PrintStream err = System.err;
    NodeOptions.Selection selection = nodeOptions.selectHere(System.getenv(), err);
    try (Redlock redlock =
        nodeOptions.build(
            selection, b -> b.retry(1, Duration.ZERO, Duration.ZERO).maxExtensions(0))) {
      String run = UUID.randomUUID().toString().substring(0, 8);
      // Warm up connections and JIT; not measured.
      for (int t = 0; t < threads; t++) {
        for (int i = 0; i < warmup; i++) {
          redlock
              .tryAcquire("redlock-bench:" + run + ":warmup:" + t, ttl)
              .ifPresent(Lease::release);
        }
      }
      AtomicLong done = new AtomicLong();
      long deadline = duration == null ? Long.MAX_VALUE : System.nanoTime() + duration.toNanos();
      AtomicLong claimed = new AtomicLong();
      List<Worker> workers = new ArrayList<>();
      List<Thread> running = new ArrayList<>();
      Progress progress =
          Progress.start(err, duration == null ? ops : duration.toMillis(), duration != null, done);
      long start = System.nanoTime();
      for (int t = 0; t < threads; t++) {
        Worker w = new Worker();
        workers.add(w);
        String key = "redlock-bench:" + run + (contended ? ":shared" : ":" + t);
        Thread thread =
            new Thread(
                () -> {
                  try {
                    while (System.nanoTime() - deadline < 0
                        && (duration != null || claimed.incrementAndGet() <= ops)) {
                      long a = System.nanoTime();
                      Optional<Lease> lease = redlock.tryAcquire(key, ttl);
                      long b = System.nanoTime();
                      w.acquire.add(b - a);
                      if (lease.isPresent()) {
                        w.acquired++;
                        lease.get().release();
                        long c = System.nanoTime();
                        w.release.add(c - b);
                        w.cycle.add(c - a);
                      } else {
                        w.notAcquired++;
                      }
                      done.incrementAndGet();
                    }
                  } catch (RuntimeException e) {
                    w.failure = e;
                  }
                },
                "redlock-bench-" + t);
        running.add(thread);
        thread.start();
      }
      for (Thread thread : running) {
        thread.join();
      }
      long elapsed = System.nanoTime() - start;
      progress.stop();
      for (Worker w : workers) {
        if (w.failure != null) {
          throw w.failure;
        }
      }
      Samples acquire = new Samples();
      Samples release = new Samples();
      Samples cycle = new Samples();
      long acquired = 0;
      long notAcquired = 0;
      for (Worker w : workers) {
        acquire.addAll(w.acquire);
        release.addAll(w.release);
        cycle.addAll(w.cycle);
        acquired += w.acquired;
        notAcquired += w.notAcquired;
      }
      double seconds = elapsed / 1e9;
      Result result =
          new Result(
              selection.source(),
              redlock.nodes().size(),
              threads,
              contended,
              Durations.millis(ttl),
              Durations.millis(redlock.settings().nodeTimeoutFor(ttl)),
              done.get(),
              acquired,
              notAcquired,
              Math.round(seconds * 1000) / 1000.0,
              Math.round(acquired / seconds * 10) / 10.0,
              Latency.of(acquire),
              Latency.of(release),
              Latency.of(cycle));
      if (json) {
        out.println(
            new ObjectMapper()
                .enable(SerializationFeature.INDENT_OUTPUT)
                .writeValueAsString(result));
      } else {
        print(out, result);
      }
      if (acquired == 0 && !contended) {
        err.println(
            "redlock: no acquisition succeeded: the nodes may be unreachable (try redlock doctor)");
        return ExitCodes.UNREACHABLE;
      }
      return ExitCodes.OK;
    }
  }

  private static void print(PrintStream out, Result r) {
    out.printf(
        Locale.ROOT,
        "redlock bench: %d node%s from %s, %d thread%s, %s key%s, TTL %s, node timeout %s%n",
        r.nodes(),
        r.nodes() == 1 ? "" : "s",
        r.nodesFrom(),
        r.threads(),
        r.threads() == 1 ? "" : "s",
        r.contended() ? "one shared" : "one",
        r.contended() ? "" : " per thread",
        ms(r.ttlMs()),
        ms(r.nodeTimeoutMs()));
    out.printf(
        Locale.ROOT,
        "%d attempts in %.2f s: %d acquired + released, %d not acquired; %.1f cycles/s%n%n",
        r.cycles(),
        r.seconds(),
        r.acquired(),
        r.notAcquired(),
        r.cyclesPerSecond());
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"", "COUNT", "P50", "P90", "P99", "P99.9", "MAX", "MEAN"});
    rows.add(row("acquire", r.acquire()));
    rows.add(row("release", r.release()));
    rows.add(row("cycle", r.cycle()));
    DoctorReport.printColumns(out, rows);
  }

  private static String[] row(String name, Latency l) {
    return new String[] {
      name,
      Long.toString(l.count()),
      ms(l.p50Ms()),
      ms(l.p90Ms()),
      ms(l.p99Ms()),
      ms(l.p999Ms()),
      ms(l.maxMs()),
      ms(l.meanMs())
    };
  }

  private static String ms(double millis) {
    return Durations.format(Durations.ofMillis(millis));
  }

  /** A progress bar on stderr, drawn only when the tool runs on a terminal. */
  static final class Progress {
    private final Thread thread;

    private Progress(Thread thread) {
      this.thread = thread;
    }

    static Progress start(PrintStream err, long total, boolean byTime, AtomicLong done) {
      if (System.console() == null) {
        return new Progress(null);
      }
      long start = System.nanoTime();
      Thread t =
          new Thread(
              () -> {
                try {
                  while (!Thread.currentThread().isInterrupted()) {
                    draw(err, total, byTime, done.get(), System.nanoTime() - start);
                    Thread.sleep(200);
                  }
                } catch (InterruptedException e) {
                  // finished
                }
              },
              "redlock-bench-progress");
      t.setDaemon(true);
      t.start();
      return new Progress(t);
    }

    private static void draw(PrintStream err, long total, boolean byTime, long done, long nanos) {
      long current = byTime ? nanos / 1_000_000 : done;
      double fraction = total <= 0 ? 1 : Math.min(1.0, (double) current / total);
      int width = 30;
      int filled = (int) Math.round(fraction * width);
      double rate = nanos <= 0 ? 0 : done / (nanos / 1e9);
      err.printf(
          Locale.ROOT,
          "\r[%s%s] %3d%%  %d attempts  %.0f/s ",
          "#".repeat(filled),
          ".".repeat(width - filled),
          Math.round(fraction * 100),
          done,
          rate);
      err.flush();
    }

    void stop() throws InterruptedException {
      if (thread != null) {
        thread.interrupt();
        thread.join();
        System.err.print("\r" + " ".repeat(70) + "\r");
        System.err.flush();
      }
    }
  }
}
