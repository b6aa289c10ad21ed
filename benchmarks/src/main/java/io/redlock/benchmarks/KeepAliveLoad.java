package io.redlock.benchmarks;

import io.redlock.Lease;
import io.redlock.Redlock;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Background renewal under load, outside JMH: holds many leases kept alive with a short TTL, so
 * that the Redlock's shared scheduler renews them all the time, and reports what that costs this
 * JVM while the application thread does nothing but wait.
 *
 * <p>It builds one Redlock (default settings) on a topology of {@link RedlockBenchmark#uris},
 * acquires {@code --leases} leases on distinct keys with {@code --ttl-ms} and calls {@code
 * keepAlive()} on each (renewal every third of the TTL), lets them run for {@code
 * --warmup-seconds}, then measures {@code --seconds}: successful renewals (the growth of every
 * lease's {@link Lease#extensions()}), the whole JVM's CPU time ({@code
 * OperatingSystemMXBean.getProcessCpuTime}) and, per group of threads, their CPU time and the bytes
 * they allocated ({@code ThreadMXBean}), the least validity any lease had left (sampled every 100
 * ms) and the leases lost. It then releases every lease still held (leases lost meanwhile are
 * counted apart) and measures the same Redlock idle for as long, whose CPU time is subtracted. The
 * servers' own CPU time is not counted.
 *
 * <p>The report prints the rate the leases ask for (one renewal per lease every third of the TTL)
 * next to the rate achieved: a renewal holds one of the scheduler's threads for its round trips, so
 * when the achieved rate falls short, the scheduler is saturated and renewals come late (see the
 * least validity left).
 *
 * <p>Run with {@code java -cp benchmarks/target/benchmarks.jar io.redlock.benchmarks.KeepAliveLoad
 * [--topology redis5] [--leases 1000] [--ttl-ms 300] [--seconds 10] [--warmup-seconds 5]}; without
 * {@value BenchServers#REDIS_PROPERTY} and {@value BenchServers#POSTGRES_PROPERTY} it starts its
 * own servers, as a JMH fork does.
 */
public final class KeepAliveLoad {
  private static final long SAMPLE_MILLIS = 100;

  private KeepAliveLoad() {}

  /** Runs the measurement; see the class comment for the options. */
  public static void main(String[] args) throws Exception {
    Map<String, String> options = parse(args);
    String topology = options.getOrDefault("topology", "redis5");
    int leases = Integer.parseInt(options.getOrDefault("leases", "1000"));
    Duration ttl = Duration.ofMillis(Long.parseLong(options.getOrDefault("ttl-ms", "300")));
    long seconds = Long.parseLong(options.getOrDefault("seconds", "10"));
    long warmupSeconds = Long.parseLong(options.getOrDefault("warmup-seconds", "5"));

    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    threads.setThreadCpuTimeEnabled(true);
    threads.setThreadAllocatedMemoryEnabled(true);

    List<String> uris = RedlockBenchmark.uris(topology);
    log("topology " + topology + ": " + uris.size() + " nodes; " + leases + " leases, TTL " + ttl);
    try (Redlock redlock = Redlock.builder().nodeUris(uris).build()) {
      AtomicInteger lost = new AtomicInteger();
      List<Lease> held = new ArrayList<>(leases);
      for (int i = 0; i < leases; i++) {
        Lease lease = redlock.acquire("bench:keepalive:" + i, ttl, Duration.ofSeconds(5));
        lease.onLost(l -> lost.incrementAndGet());
        held.add(lease.keepAlive());
      }
      log("acquired and kept alive; warming up for " + warmupSeconds + " s");
      TimeUnit.SECONDS.sleep(warmupSeconds);
      int lostBefore = lost.get();

      Window busy = Window.start(os, threads, extensions(held));
      long leastLeft = Long.MAX_VALUE;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
      while (System.nanoTime() < deadline) {
        TimeUnit.MILLISECONDS.sleep(SAMPLE_MILLIS);
        for (Lease lease : held) {
          if (lease.isValid()) {
            leastLeft = Math.min(leastLeft, lease.remainingValidity().toNanos());
          }
        }
      }
      Window.End busyEnd = busy.end(extensions(held));
      int lostDuring = lost.get() - lostBefore;

      int released = 0;
      for (Lease lease : held) {
        if (lease.isValid()) {
          lease.release();
          released++;
        }
      }
      log(
          "released the "
              + released
              + " leases still held; measuring the idle Redlock for "
              + seconds
              + " s");
      TimeUnit.SECONDS.sleep(1);
      int lostReleasing = lost.get() - lostBefore - lostDuring;
      Window idle = Window.start(os, threads, 0);
      TimeUnit.SECONDS.sleep(seconds);
      Window.End idleEnd = idle.end(0);

      System.out.println(
          report(
              topology,
              uris.size(),
              leases,
              ttl,
              busyEnd,
              idleEnd,
              leastLeft,
              lostBefore + " / " + lostDuring + " / " + lostReleasing));
    }
  }

  private static long extensions(List<Lease> leases) {
    long sum = 0;
    for (Lease lease : leases) {
      sum += lease.extensions();
    }
    return sum;
  }

  private static String report(
      String topology,
      int nodes,
      int leases,
      Duration ttl,
      Window.End busy,
      Window.End idle,
      long leastLeftNanos,
      String lost) {
    double secs = busy.nanos / 1e9;
    double renewalsPerSecond = busy.renewals / secs;
    double scheduledPerSecond = leases / (ttl.toNanos() / 3 / 1e9);
    double idleCpuPerSecond = idle.cpuNanos / (idle.nanos / 1e9);
    double cpuNanos = busy.cpuNanos - idleCpuPerSecond * secs;
    StringBuilder sb = new StringBuilder();
    sb.append("### Background renewal: ")
        .append(leases)
        .append(" leases kept alive, TTL ")
        .append(ttl.toMillis())
        .append(" ms, ")
        .append(topology)
        .append(" (")
        .append(nodes)
        .append(" nodes)\n\n");
    sb.append("| figure | value |\n|---|---:|\n");
    row(sb, "measured for", f("%.1f s", secs));
    row(
        sb,
        "renewals/s (one per TTL/3 and lease: " + f("%,.0f", scheduledPerSecond) + ")",
        f("%,.0f", renewalsPerSecond));
    row(
        sb,
        "JVM CPU time per renewal (idle Redlock's subtracted)",
        f("%.1f µs", cpuNanos / busy.renewals / 1e3));
    row(
        sb,
        "JVM CPU, cores busy (idle Redlock: " + f("%.3f", idleCpuPerSecond / 1e9) + ")",
        f("%.3f", (double) busy.cpuNanos / busy.nanos));
    row(
        sb,
        "bytes allocated per renewal (all threads)",
        f("%,.0f", (double) busy.allocated / busy.renewals));
    row(
        sb,
        "least validity left, any lease (sampled every " + SAMPLE_MILLIS + " ms)",
        leastLeftNanos == Long.MAX_VALUE ? "–" : f("%.0f ms", leastLeftNanos / 1e6));
    row(sb, "leases lost in warm-up / measurement / while the others were released", lost);
    sb.append("\nCPU time and allocation by thread group, per renewal:\n\n");
    sb.append("| threads | CPU µs/renewal | bytes/renewal |\n|---|---:|---:|\n");
    busy.byGroup.entrySet().stream()
        .sorted((a, b) -> Long.compare(b.getValue()[0], a.getValue()[0]))
        .filter(e -> e.getValue()[0] > 0 || e.getValue()[1] > 0)
        .forEach(
            e ->
                sb.append("| ")
                    .append(e.getKey())
                    .append(" | ")
                    .append(f("%.2f", e.getValue()[0] / 1e3 / busy.renewals))
                    .append(" | ")
                    .append(f("%,.0f", (double) e.getValue()[1] / busy.renewals))
                    .append(" |\n"));
    return sb.toString();
  }

  private static void row(StringBuilder sb, String name, String value) {
    sb.append("| ").append(name).append(" | ").append(value).append(" |\n");
  }

  private static String f(String format, double value) {
    return String.format(Locale.ROOT, format, value);
  }

  /** Counters at the start of a measured window. */
  private record Window(
      com.sun.management.OperatingSystemMXBean os,
      com.sun.management.ThreadMXBean threads,
      long startNanos,
      long cpuNanos,
      long renewals,
      Map<Long, long[]> perThread) {

    static Window start(
        com.sun.management.OperatingSystemMXBean os,
        com.sun.management.ThreadMXBean threads,
        long renewals) {
      return new Window(
          os, threads, System.nanoTime(), os.getProcessCpuTime(), renewals, perThread(threads));
    }

    /** The counters' growth since the start; threads born meanwhile count from zero. */
    End end(long renewalsNow) {
      long cpu = os.getProcessCpuTime() - cpuNanos;
      long nanos = System.nanoTime() - startNanos;
      Map<Long, long[]> now = perThread(threads);
      Map<String, long[]> byGroup = new LinkedHashMap<>();
      Map<Long, String> names = names(threads);
      long allocated = 0;
      for (Map.Entry<Long, long[]> e : now.entrySet()) {
        long[] before = perThread.getOrDefault(e.getKey(), new long[2]);
        long cpuDelta = Math.max(0, e.getValue()[0] - before[0]);
        long allocDelta = Math.max(0, e.getValue()[1] - before[1]);
        allocated += allocDelta;
        long[] group =
            byGroup.computeIfAbsent(group(names.getOrDefault(e.getKey(), "?")), k -> new long[2]);
        group[0] += cpuDelta;
        group[1] += allocDelta;
      }
      return new End(nanos, cpu, renewalsNow - renewals, allocated, byGroup);
    }

    private static Map<Long, long[]> perThread(com.sun.management.ThreadMXBean threads) {
      Map<Long, long[]> out = new HashMap<>();
      for (long id : threads.getAllThreadIds()) {
        long cpu = threads.getThreadCpuTime(id);
        long alloc = threads.getThreadAllocatedBytes(id);
        if (cpu >= 0) {
          out.put(id, new long[] {cpu, Math.max(0, alloc)});
        }
      }
      return out;
    }

    private static Map<Long, String> names(com.sun.management.ThreadMXBean threads) {
      Map<Long, String> out = new HashMap<>();
      for (ThreadInfo info : threads.getThreadInfo(threads.getAllThreadIds())) {
        if (info != null) {
          out.put(info.getThreadId(), info.getThreadName());
        }
      }
      return out;
    }

    /** A thread's group: its name up to the first space, digits replaced by '#'. */
    private static String group(String name) {
      int space = name.indexOf(' ');
      return (space < 0 ? name : name.substring(0, space)).replaceAll("[0-9]+", "#");
    }

    /** What a window measured. */
    record End(
        long nanos, long cpuNanos, long renewals, long allocated, Map<String, long[]> byGroup) {}
  }

  private static Map<String, String> parse(String[] args) {
    List<String> known = List.of("topology", "leases", "ttl-ms", "seconds", "warmup-seconds");
    Map<String, String> options = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      String name = args[i].startsWith("--") ? args[i].substring(2) : "";
      if (!known.contains(name) || i + 1 >= args.length) {
        throw new IllegalArgumentException(
            "usage: KeepAliveLoad [--" + String.join(" V] [--", known) + " V]; got " + args[i]);
      }
      options.put(name, args[++i]);
    }
    return options;
  }

  private static void log(String message) {
    System.err.println("[keepalive-load] " + message);
  }
}
