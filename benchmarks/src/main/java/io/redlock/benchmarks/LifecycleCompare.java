package io.redlock.benchmarks;

import io.redlock.Lease;
import io.redlock.Redlock;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.LongUnaryOperator;

/**
 * The cases of {@link LeaseLifecycleBenchmark} side by side, slice by slice, as {@link
 * CompareBuilds} compares builds: one JVM, one Redlock (default settings) on one topology, one
 * calling thread; the cases take turns running a short slice of operations, who goes first
 * alternating. Noise from a shared machine then hits neighbouring slices of every case alike, and
 * the per-slice ratio to the plain cycle is far steadier than the ratio of two JMH forks.
 *
 * <p>For each case it reports the median slice's time per operation, the calling thread's CPU time
 * per operation (median slice), the whole JVM's CPU time per operation summed over all slices
 * (worker threads included: the async cases and the renewals do their work on the library's
 * threads) and how much of it was not the calling thread's (the library's threads, but also GC and
 * JIT compilation), and the ratios to the cycle: the median per-slice ratio of wall time with its
 * quartiles, and the ratio of the JVM's CPU time over all slices. The plain cycle runs twice, as
 * two cases: the second one's ratios to the first show how much noise the ratios still carry.
 *
 * <p>Usage: {@code LifecycleCompare [--topology redis5] [--slices 400] [--per 100]}; without
 * {@value BenchServers#REDIS_PROPERTY} and {@value BenchServers#POSTGRES_PROPERTY} it starts its
 * own servers. One thread only: it measures the cost of an operation, not scaling.
 */
public final class LifecycleCompare {
  private static final Duration TTL = Workload.TTL;
  private static final Duration HELD_MAX_WAIT = Duration.ofSeconds(5);

  private LifecycleCompare() {}

  /** One case: its name and a driver that runs {@code n} operations and returns their nanos. */
  private record Case(String name, LongUnaryOperator driver) {}

  public static void main(String[] args) throws Exception {
    String topology = "redis5";
    int slices = 400;
    int per = 100;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--topology" -> topology = value(args, ++i);
        case "--slices" -> slices = Integer.parseInt(value(args, ++i));
        case "--per" -> per = Integer.parseInt(value(args, ++i));
        default ->
            throw new IllegalArgumentException(
                "usage: LifecycleCompare [--topology T] [--slices N] [--per N]; got " + args[i]);
      }
    }
    try (Redlock redlock = Redlock.builder().nodeUris(RedlockBenchmark.uris(topology)).build()) {
      Keys keys = new Keys("lifecycle-compare:");
      Held held = new Held(redlock, "lifecycle-compare:held");
      List<Case> cases =
          List.of(
              new Case("cycle: tryAcquire + release", n -> cycles(redlock, keys, n, false)),
              new Case(
                  "the same cycle again (A/A control: the noise left)",
                  n -> cycles(redlock, keys, n, false)),
              new Case(
                  "kept-alive cycle: tryAcquire + keepAlive() + release",
                  n -> cycles(redlock, keys, n, true)),
              new Case(
                  "async cycle: tryAcquireAsync + releaseAsync, joined",
                  n -> asyncCycles(redlock, keys, n)),
              new Case("renewal: extend of a held lease", n -> renewals(held, n, false)),
              new Case("async renewal: extendAsync, joined", n -> renewals(held, n, true)));
      run(cases, slices, per, topology);
      held.release();
    }
    System.exit(0); // the servers of BenchServers.get() stop at exit
  }

  private static void run(List<Case> cases, int slices, int per, String topology) {
    int n = cases.size();
    for (int warm = 0; warm < 50; warm++) {
      for (Case c : cases) {
        c.driver().applyAsLong(per);
      }
    }
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long[][] wall = new long[n][slices];
    long[][] cpu = new long[n][slices];
    long[][] processCpu = new long[n][slices]; // the OS counts it in ticks of ~10 ms: sum it
    for (int s = 0; s < slices; s++) {
      for (int k = 0; k < n; k++) {
        int j = s % 2 == 0 ? k : n - 1 - k; // who goes first alternates
        long process0 = os.getProcessCpuTime();
        long cpu0 = threads.getCurrentThreadCpuTime();
        wall[j][s] = cases.get(j).driver().applyAsLong(per);
        cpu[j][s] = threads.getCurrentThreadCpuTime() - cpu0;
        processCpu[j][s] = os.getProcessCpuTime() - process0;
      }
    }
    System.out.printf(
        Locale.ROOT,
        "%s, 1 calling thread, %d slices of %d operations per case, taking turns%n%n",
        topology,
        slices,
        per);
    System.out.println(
        "| case | µs per op, median slice | calling thread's CPU µs per op, median slice |"
            + " whole JVM's CPU µs per op, all slices | of which not the calling thread's |"
            + " wall ÷ cycle, per slice: median [p25–p75] | JVM's CPU ÷ cycle, all slices |");
    System.out.println("|---|---:|---:|---:|---:|---:|---:|");
    for (int j = 0; j < n; j++) {
      System.out.printf(
          Locale.ROOT,
          "| %s | %.1f | %.1f | %.1f | %.1f | %s | %s |%n",
          cases.get(j).name(),
          median(wall[j]) / 1e3 / per,
          median(cpu[j]) / 1e3 / per,
          (double) Arrays.stream(processCpu[j]).sum() / 1e3 / per / slices,
          (double) (Arrays.stream(processCpu[j]).sum() - Arrays.stream(cpu[j]).sum())
              / 1e3
              / per
              / slices,
          j == 0 ? "1 (reference)" : quartiles(wall[j], wall[0]),
          j == 0
              ? "1"
              : String.format(
                  Locale.ROOT,
                  "%.3f",
                  (double) Arrays.stream(processCpu[j]).sum()
                      / Arrays.stream(processCpu[0]).sum()));
    }
  }

  /** 256 keys used in turn: a key's lease is always released before the key comes round again. */
  private static final class Keys {
    private final String[] keys = new String[256];
    private int next;

    Keys(String prefix) {
      for (int i = 0; i < keys.length; i++) {
        keys[i] = prefix + i;
      }
    }

    String next() {
      return keys[next++ & 255];
    }
  }

  /** A lease held for the renewals, replaced before it reaches the maximum of extensions. */
  private static final class Held {
    private final Redlock redlock;
    private final String key;
    private final int rotateAt;
    private Lease lease;

    Held(Redlock redlock, String key) throws InterruptedException {
      this.redlock = redlock;
      this.key = key;
      this.rotateAt = redlock.settings().maxExtensions();
      this.lease = redlock.acquire(key, TTL, HELD_MAX_WAIT);
    }

    /** The lease, replaced first if it could not be extended {@code n} more times. */
    Lease lease(long n) {
      if (lease.extensions() + n > rotateAt || !lease.isValid()) {
        lease.release();
        try {
          lease = redlock.acquire(key, TTL, HELD_MAX_WAIT);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(e);
        }
      }
      return lease;
    }

    void release() {
      lease.release();
    }
  }

  private static long cycles(Redlock redlock, Keys keys, long n, boolean keepAlive) {
    long start = System.nanoTime();
    for (long i = 0; i < n; i++) {
      Lease lease =
          redlock
              .tryAcquire(keys.next(), TTL)
              .orElseThrow(() -> new IllegalStateException("an uncontended key was held"));
      if (keepAlive) {
        lease.keepAlive();
      }
      lease.release();
    }
    return System.nanoTime() - start;
  }

  private static long asyncCycles(Redlock redlock, Keys keys, long n) {
    long start = System.nanoTime();
    for (long i = 0; i < n; i++) {
      Lease lease =
          redlock
              .tryAcquireAsync(keys.next(), TTL)
              .join()
              .orElseThrow(() -> new IllegalStateException("an uncontended key was held"));
      lease.releaseAsync().join();
    }
    return System.nanoTime() - start;
  }

  private static long renewals(Held held, long n, boolean async) {
    Lease lease = held.lease(n); // replaced, if need be, before the slice is timed
    long start = System.nanoTime();
    for (long i = 0; i < n; i++) {
      boolean extended = async ? lease.extendAsync(TTL).join() : lease.extend(TTL);
      if (!extended) {
        throw new IllegalStateException("an extend of a held lease was refused");
      }
    }
    return System.nanoTime() - start;
  }

  private static String quartiles(long[] subject, long[] reference) {
    double[] r = new double[subject.length];
    for (int s = 0; s < r.length; s++) {
      r[s] = (double) subject[s] / reference[s];
    }
    Arrays.sort(r);
    return String.format(
        Locale.ROOT, "%.3f [%.3f–%.3f]", r[r.length / 2], r[r.length / 4], r[3 * r.length / 4]);
  }

  private static double median(long[] values) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  private static String value(String[] args, int i) {
    if (i >= args.length) {
      throw new IllegalArgumentException(args[i - 1] + " needs a value");
    }
    return args[i];
  }
}
