package io.redlock.benchmarks;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.LongUnaryOperator;

/**
 * Compares builds of the library in one JVM, on the same servers, slice by slice: each build gets a
 * class loader of its own (its benchmarks jar, which carries the library and its drivers), and the
 * builds take turns running a short slice of lock cycles on one thread (or, with {@code --threads
 * N}, on N threads sharing one {@code Redlock}). Noise from a shared machine then hits neighbouring
 * slices of both builds alike, and the per-slice ratio is far steadier than comparing separate
 * runs: on this project's 2-core machines two runs of the same build, in separate JVMs, differed by
 * up to 10%, while an A/A comparison here gave a median ratio within 1%.
 *
 * <p>Usage: {@code CompareBuilds [--topology redis5] [--slices 400] [--per 100] [--threads 1]
 * [--floors] A.jar B.jar ...}; the first jar is the reference. {@code --topology} takes one
 * topology of {@link RedlockBenchmark#uris} for every build, or a comma-separated list with one per
 * build (to compare one build's pgjdbc nodes with another's Vert.x nodes, say). With {@code
 * --floors} the floors of the (first) topology ({@link Floors}, this harness's own code) take turns
 * too and come first, the first floor being the reference: then one build is enough, and the ratios
 * say how far it is from each floor. {@code benchmarks/compare} builds jars of git revisions and
 * runs this. On one thread it measures the cost of a cycle; with {@code --threads} it also measures
 * how a build scales.
 */
public final class CompareBuilds {
  private static final String DRIVER = CycleDriver.class.getName();
  private static final String PARALLEL_DRIVER = ParallelCycleDriver.class.getName();

  private CompareBuilds() {}

  public static void main(String[] args) throws Exception {
    String topology = "redis5";
    int slices = 400;
    int per = 100;
    boolean withFloors = false;
    int threads = 1;
    List<Path> jars = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--topology" -> topology = value(args, ++i);
        case "--slices" -> slices = positive(args, ++i);
        case "--per" -> per = positive(args, ++i);
        case "--threads" -> threads = positive(args, ++i);
        case "--floors" -> withFloors = true;
        default -> {
          Path jar = Path.of(args[i]);
          if (!Files.isRegularFile(jar)) {
            throw new IllegalArgumentException(
                "not a jar file: " + args[i] + " (give the benchmarks.jar of each build)");
          }
          jars.add(jar);
        }
      }
    }
    List<String> topologies = List.of(topology.split(","));
    if (topologies.size() != 1 && topologies.size() != jars.size()) {
      throw new IllegalArgumentException(
          "--topology names "
              + topologies.size()
              + " topologies for "
              + jars.size()
              + " builds: give one for all builds, or one per build");
    }
    if (withFloors ? jars.isEmpty() : jars.size() < 2) {
      throw new IllegalArgumentException(
          withFloors
              ? "give at least one benchmarks jar to compare with the floors"
              : "give at least two benchmarks jars to compare, the reference first"
                  + " (or one and --floors)");
    }
    if (withFloors && threads > 1) {
      throw new IllegalArgumentException("--floors runs on one thread: leave out --threads");
    }
    byte[] driverBytes = classBytes(CycleDriver.class);
    byte[] parallelBytes = classBytes(ParallelCycleDriver.class);
    List<String> names = new ArrayList<>();
    List<LongUnaryOperator> drivers = new ArrayList<>();
    List<URLClassLoader> loaders = new ArrayList<>();
    try {
      if (withFloors) {
        for (Floors.Floor floor : Floors.of(topologies.get(0))) {
          names.add(floor.name());
          drivers.add(floor.driver());
        }
      }
      for (int j = 0; j < jars.size(); j++) {
        URLClassLoader loader =
            new BuildLoader(jars.get(j).toUri().toURL(), driverBytes, parallelBytes);
        loaders.add(loader);
        String buildTopology = topologies.get(topologies.size() == 1 ? 0 : j);
        names.add(jars.get(j) + (topologies.size() == 1 ? "" : " (" + buildTopology + ")"));
        List<String> uris = RedlockBenchmark.uris(buildTopology);
        drivers.add(newDriver(loader, uris, "compare:" + j + ":", threads));
      }
      run(names, drivers, slices, per, topology, threads);
    } finally {
      for (LongUnaryOperator driver : drivers) {
        ((AutoCloseable) driver).close();
      }
      for (URLClassLoader loader : loaders) {
        loader.close();
      }
    }
    System.exit(0); // the servers of BenchServers.get() stop at exit
  }

  private static void run(
      List<String> names,
      List<LongUnaryOperator> drivers,
      int slices,
      int per,
      String topology,
      int threads) {
    int n = drivers.size();
    for (int warm = 0; warm < 50; warm++) {
      for (LongUnaryOperator driver : drivers) {
        driver.applyAsLong(per);
      }
    }
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long[][] wall = new long[n][slices];
    long[][] cpu = new long[n][slices];
    long[][] processCpu = new long[n][slices]; // the OS counts it in ticks of ~10 ms: sum it
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    for (int s = 0; s < slices; s++) {
      for (int k = 0; k < n; k++) {
        int j = s % 2 == 0 ? k : n - 1 - k; // who goes first alternates
        long process0 = os.getProcessCpuTime();
        long cpu0 = mx.getCurrentThreadCpuTime();
        wall[j][s] = drivers.get(j).applyAsLong(per);
        cpu[j][s] = mx.getCurrentThreadCpuTime() - cpu0;
        processCpu[j][s] = os.getProcessCpuTime() - process0;
      }
    }
    System.out.printf(
        Locale.ROOT,
        "%s, %d thread(s), %d slices of %d cycles per thread per build or floor, taking turns%n%n",
        topology,
        threads,
        slices,
        per);
    System.out.println(
        "| build | cycle µs, median slice | calling thread's CPU µs per cycle, median slice |"
            + " whole JVM's CPU µs per cycle, all slices |"
            + " wall ÷ reference, per slice: median [p25–p75] |"
            + " calling thread's CPU ÷ reference, per slice | JVM's CPU ÷ reference, all slices |");
    System.out.println("|---|---:|---:|---:|---:|---:|---:|");
    for (int j = 0; j < n; j++) {
      String ratios = "1 (reference)";
      String cpuRatios = "1";
      String jvmRatio = "1";
      if (j > 0) {
        ratios = quartiles(wall[j], wall[0]);
        cpuRatios = quartiles(cpu[j], cpu[0]);
        jvmRatio =
            String.format(
                Locale.ROOT,
                "%.3f",
                (double) Arrays.stream(processCpu[j]).sum() / Arrays.stream(processCpu[0]).sum());
      }
      System.out.printf(
          Locale.ROOT,
          "| %s | %.1f | %.1f | %.1f | %s | %s | %s |%n",
          names.get(j),
          median(wall[j]) / 1e3 / per / threads,
          median(cpu[j]) / 1e3 / per,
          (double) Arrays.stream(processCpu[j]).sum() / 1e3 / per / slices / threads,
          ratios,
          cpuRatios,
          jvmRatio);
    }
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

  private static LongUnaryOperator newDriver(
      ClassLoader loader, List<String> uris, String prefix, int threads)
      throws ReflectiveOperationException {
    // JDBC drivers register with DriverManager when their class initializes, and DriverManager
    // hands a caller only the drivers of its own class loader: initialize this build's one.
    try {
      Class.forName("org.postgresql.Driver", true, loader);
    } catch (ClassNotFoundException e) {
      // a build without PostgreSQL: fine for Redis topologies
    }
    Thread current = Thread.currentThread();
    ClassLoader before = current.getContextClassLoader();
    current.setContextClassLoader(loader); // ServiceLoader lookups of node providers
    try {
      if (threads > 1) {
        return (LongUnaryOperator)
            loader
                .loadClass(PARALLEL_DRIVER)
                .getConstructor(List.class, String.class, Integer.class)
                .newInstance(uris, prefix, threads);
      }
      return (LongUnaryOperator)
          loader
              .loadClass(DRIVER)
              .getConstructor(List.class, String.class)
              .newInstance(uris, prefix);
    } finally {
      current.setContextClassLoader(before);
    }
  }

  private static byte[] classBytes(Class<?> type) {
    String resource = type.getName().replace('.', '/') + ".class";
    try (InputStream in = type.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("cannot read " + resource);
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * One build: its jar, with only the JDK shared. Builds older than {@link CycleDriver} get this
   * build's copy of it, defined in their loader so that it links against their classes.
   */
  private static final class BuildLoader extends URLClassLoader {
    private final byte[] driverBytes;
    private final byte[] parallelBytes;

    BuildLoader(URL jar, byte[] driverBytes, byte[] parallelBytes) {
      super(new URL[] {jar}, ClassLoader.getPlatformClassLoader());
      this.driverBytes = driverBytes;
      this.parallelBytes = parallelBytes;
    }

    @Override
    protected Class<?> findClass(String name) throws ClassNotFoundException {
      try {
        return super.findClass(name);
      } catch (ClassNotFoundException e) {
        if (name.equals(DRIVER)) {
          return defineClass(name, driverBytes, 0, driverBytes.length);
        }
        if (name.equals(PARALLEL_DRIVER)) {
          return defineClass(name, parallelBytes, 0, parallelBytes.length);
        }
        throw e;
      }
    }
  }

  private static String value(String[] args, int i) {
    if (i >= args.length) {
      throw new IllegalArgumentException(args[i - 1] + " needs a value");
    }
    return args[i];
  }

  private static int positive(String[] args, int i) {
    String v = value(args, i);
    try {
      int n = Integer.parseInt(v);
      if (n > 0) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(args[i - 1] + " needs a positive whole number, got " + v);
  }
}
