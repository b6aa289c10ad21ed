package io.redlock.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

/**
 * Latencies that JMH cannot see on its own, recorded by each benchmark thread during measurement
 * iterations only: the acquire part of a cycle, and in the contended case the wait between one
 * release and the next grant. Failed acquires and unconfirmed releases are counted in measurement
 * and, apart, in warm-up iterations. Recording allocates nothing (a preallocated HdrHistogram per
 * thread), so it does not disturb the allocation figures.
 *
 * <p>At the end of a trial every thread merges its histograms into this JVM's totals, which are
 * written as a properties file to the folder named by {@value #OUT_PROPERTY} (if set), one file per
 * benchmark and parameter set; {@link RunAll} reads them back.
 */
@State(Scope.Thread)
public class Recorder {
  /** Folder for the per-benchmark result files. */
  public static final String OUT_PROPERTY = "redlock.bench.out";

  /** Metric: time of the acquire step of a cycle. */
  public static final String ACQUIRE = "acquire";

  /** Metric: from the start of one holder's release to the next grant (any client). */
  public static final String GAP = "gap";

  /** Metric: as {@link #GAP}, only for grants to another client than the last holder. */
  public static final String HANDOFF = "handoff";

  private static final long HIGHEST = TimeUnit.SECONDS.toNanos(60);
  private static final Map<String, Totals> TOTALS = new HashMap<>();

  private final Histogram acquire = new Histogram(HIGHEST, 3);
  private final Histogram gap = new Histogram(HIGHEST, 3);
  private final Histogram handoff = new Histogram(HIGHEST, 3);
  private boolean recording;
  private long failures;
  private long unconfirmed;
  private long grants;
  private long handoffs;
  private long warmupCycles;
  private long warmupFailures;
  private long warmupUnconfirmed;

  /** Records only in measurement iterations. */
  @Setup(Level.Iteration)
  public void iteration(IterationParams iteration) {
    recording = iteration.getType() == IterationType.MEASUREMENT;
  }

  /** The acquire step of a cycle took {@code nanos}. */
  public void acquired(long nanos) {
    if (recording) {
      acquire.recordValue(Math.min(nanos, HIGHEST));
    } else {
      warmupCycles++;
    }
  }

  /** An acquire gave up (resource held or nodes unreachable); counted, not timed. */
  public void failed() {
    if (recording) {
      failures++;
    } else {
      warmupCycles++;
      warmupFailures++;
    }
  }

  /**
   * A release that not every node confirmed (its outcome not {@linkplain
   * io.redlock.ReleaseOutcome#complete() complete}): a key may be left behind until its TTL ends.
   * Called after {@link #acquired} for the same cycle.
   */
  public void unconfirmed() {
    if (recording) {
      unconfirmed++;
    } else {
      warmupUnconfirmed++;
    }
  }

  /**
   * A grant in the contended case: {@code gapNanos} after the previous holder began its release;
   * {@code handoff} if the previous holder was another client.
   */
  public void granted(long gapNanos, boolean handoff) {
    if (recording) {
      grants++;
      long v = Math.max(0, Math.min(gapNanos, HIGHEST));
      gap.recordValue(v);
      if (handoff) {
        handoffs++;
        this.handoff.recordValue(v);
      }
    }
  }

  /** Adds this thread's figures to the JVM's totals and writes them out. */
  @TearDown(Level.Trial)
  public void publish(BenchmarkParams params) {
    String key = key(params);
    synchronized (TOTALS) {
      Totals totals = TOTALS.computeIfAbsent(key, k -> new Totals());
      totals.acquire.add(acquire);
      totals.gap.add(gap);
      totals.handoff.add(handoff);
      totals.failures += failures;
      totals.unconfirmed += unconfirmed;
      totals.warmupCycles += warmupCycles;
      totals.warmupFailures += warmupFailures;
      totals.warmupUnconfirmed += warmupUnconfirmed;
      totals.grants += grants;
      totals.handoffs += handoffs;
      String out = System.getProperty(OUT_PROPERTY);
      if (out != null) {
        totals.write(Path.of(out).resolve(fileName(key)));
      }
    }
  }

  /** Identifies one benchmark with its parameters and thread count, here and in {@link RunAll}. */
  public static String key(BenchmarkParams params) {
    String method = params.getBenchmark();
    StringBuilder sb =
        new StringBuilder(
            method.substring(method.lastIndexOf('.', method.lastIndexOf('.') - 1) + 1));
    for (String p : new TreeMap<>(paramsOf(params)).keySet()) {
      sb.append(':').append(p).append('=').append(params.getParam(p));
    }
    return sb.append(":threads=").append(params.getThreads()).toString();
  }

  private static Map<String, String> paramsOf(BenchmarkParams params) {
    Map<String, String> out = new HashMap<>();
    for (String k : params.getParamsKeys()) {
      out.put(k, params.getParam(k));
    }
    return out;
  }

  /** The result file of a benchmark key. */
  public static String fileName(String key) {
    return key.replaceAll("[^A-Za-z0-9_.=-]", "_") + ".properties";
  }

  /** Reads a result file written by {@link #publish}; empty properties if there is none. */
  public static Properties read(Path file) {
    Properties p = new Properties();
    if (Files.isRegularFile(file)) {
      try (var in = Files.newInputStream(file)) {
        p.load(in);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return p;
  }

  private static final class Totals {
    final Histogram acquire = new Histogram(HIGHEST, 3);
    final Histogram gap = new Histogram(HIGHEST, 3);
    final Histogram handoff = new Histogram(HIGHEST, 3);
    long failures;
    long unconfirmed;
    long warmupCycles;
    long warmupFailures;
    long warmupUnconfirmed;
    long grants;
    long handoffs;

    void write(Path file) {
      Properties p = new Properties();
      put(p, ACQUIRE, acquire);
      put(p, GAP, gap);
      put(p, HANDOFF, handoff);
      // measured cycles: the timed acquires and the failed ones
      p.setProperty("cycles", Long.toString(acquire.getTotalCount() + failures));
      p.setProperty("failures", Long.toString(failures));
      p.setProperty("unconfirmed", Long.toString(unconfirmed));
      p.setProperty("warmup.cycles", Long.toString(warmupCycles));
      p.setProperty("warmup.failures", Long.toString(warmupFailures));
      p.setProperty("warmup.unconfirmed", Long.toString(warmupUnconfirmed));
      p.setProperty("grants", Long.toString(grants));
      p.setProperty("handoffs", Long.toString(handoffs));
      try {
        Files.createDirectories(file.getParent());
        try (var out = Files.newOutputStream(file)) {
          p.store(out, "written by " + Recorder.class.getName());
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    private static void put(Properties p, String metric, Histogram h) {
      p.setProperty(metric + ".count", Long.toString(h.getTotalCount()));
      if (h.getTotalCount() > 0) {
        // microseconds, like JMH's figures
        p.setProperty(metric + ".mean", Double.toString(h.getMean() / 1e3));
        p.setProperty(metric + ".p50", Double.toString(h.getValueAtPercentile(50) / 1e3));
        p.setProperty(metric + ".p99", Double.toString(h.getValueAtPercentile(99) / 1e3));
        p.setProperty(metric + ".max", Double.toString(h.getMaxValue() / 1e3));
      }
    }
  }
}
