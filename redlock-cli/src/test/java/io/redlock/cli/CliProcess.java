package io.redlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.cli.plugin.NoCapabilitiesProvider;
import io.redlock.spi.LockNodeProvider;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The real {@code redlock.jar}, run as a separate process the way the launcher runs it: output to
 * files (no pipe can fill up), every wait bounded, killed if a test forgets it.
 */
final class CliProcess implements AutoCloseable {
  private static final AtomicInteger COUNTER = new AtomicInteger();

  final Process process;
  final Path stdout;
  final Path stderr;

  private CliProcess(Process process, Path stdout, Path stderr) {
    this.process = process;
    this.stdout = stdout;
    this.stderr = stderr;
  }

  /** A fresh working folder for one test, under target/it, named after the test method. */
  static Path testDir(org.junit.jupiter.api.TestInfo info) throws IOException {
    return Files.createDirectories(
        Path.of(
                "target",
                "it",
                info.getTestMethod().orElseThrow().getName() + "-" + java.util.UUID.randomUUID())
            .toAbsolutePath());
  }

  /** Waits (at most 60 s, and no longer than {@code p} lives) until {@code file} exists. */
  static void awaitFile(Path file, CliProcess p) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!Files.exists(file)) {
      if (System.nanoTime() - deadline > 0 || !p.process.isAlive()) {
        throw new AssertionError("no " + file.getFileName() + " from " + p);
      }
      Thread.sleep(10);
    }
  }

  /** The jar built in the package phase; failsafe passes its path. */
  static Path jar() {
    String path = System.getProperty("redlock.cli.jar");
    assertThat(path)
        .as("system property redlock.cli.jar (set by failsafe in redlock-cli/pom.xml)")
        .isNotNull();
    Path jar = Path.of(path);
    assertThat(jar).as("the shaded jar; run the package phase first").isRegularFile();
    return jar;
  }

  /**
   * Like {@link #start(Path, Map, String...)}, with a third party's backend added the documented
   * way, on {@code REDLOCK_CLASSPATH}: the {@code nocaps:} scheme of {@link
   * NoCapabilitiesProvider}, which wraps any node URI and declares neither fencing counters nor
   * status reports.
   */
  static CliProcess startWithPlugin(Path dir, Map<String, String> env, String... args) {
    Map<String, String> withPlugin = new HashMap<>(env);
    withPlugin.put("REDLOCK_CLASSPATH", plugin(dir).toString());
    return start(dir, withPlugin, args);
  }

  /**
   * A plugin directory as a third party would ship it: the provider's classes and its {@code
   * META-INF/services} entry, and nothing else from the test class path.
   */
  static Path plugin(Path dir) {
    try {
      Path plugin = dir.resolve("plugin");
      Path classes =
          Path.of(
              NoCapabilitiesProvider.class
                  .getProtectionDomain()
                  .getCodeSource()
                  .getLocation()
                  .toURI());
      String pkg = NoCapabilitiesProvider.class.getPackageName().replace('.', '/');
      Path target = Files.createDirectories(plugin.resolve(pkg));
      try (var files = Files.list(classes.resolve(pkg))) {
        for (Path f : files.filter(f -> f.toString().endsWith(".class")).toList()) {
          Files.copy(
              f, target.resolve(f.getFileName().toString()), StandardCopyOption.REPLACE_EXISTING);
        }
      }
      Path services = Files.createDirectories(plugin.resolve("META-INF/services"));
      Files.writeString(
          services.resolve(LockNodeProvider.class.getName()),
          NoCapabilitiesProvider.class.getName() + "\n");
      return plugin;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (java.net.URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Starts {@code redlock ARGS} in {@code dir} with {@code env} added to a clean environment. */
  static CliProcess start(Path dir, Map<String, String> env, String... args) {
    List<String> command = new ArrayList<>();
    command.add(java());
    command.add("-XX:+UseSerialGC");
    command.add("-XX:TieredStopAtLevel=1");
    command.add("-jar");
    command.add(jar().toString());
    command.addAll(List.of(args));
    return start(dir, env, command);
  }

  private static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /**
   * Starts {@code ./redlock ARGS}, the launcher script at the project's root, with this JVM as its
   * Java: the tool exactly as users run it, JVM options included.
   */
  static CliProcess startLauncher(Path dir, Map<String, String> env, String... args) {
    Path launcher = jar().toAbsolutePath().getParent().getParent().getParent().resolve("redlock");
    assertThat(launcher).as("the launcher script").isRegularFile();
    Map<String, String> withJava = new HashMap<>(env);
    withJava.put("JAVA", java());
    withJava.putIfAbsent("JAVA_OPTS", "");
    List<String> command = new ArrayList<>(List.of("sh", launcher.toString()));
    command.addAll(List.of(args));
    return start(dir, withJava, command);
  }

  private static CliProcess start(Path dir, Map<String, String> env, List<String> command) {
    int n = COUNTER.incrementAndGet();
    Path out = dir.resolve("redlock-" + n + ".out");
    Path err = dir.resolve("redlock-" + n + ".err");
    ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile());
    pb.environment().remove("REDLOCK_NODES");
    pb.environment().remove("REDLOCK_CONFIG");
    pb.environment().remove("REDLOCK_CLASSPATH");
    pb.environment().remove("REDLOCK_EXEC_SOCKET"); // not an outer exec's, if the build runs in one
    pb.environment().putAll(env);
    pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
    pb.redirectOutput(out.toFile());
    pb.redirectError(err.toFile());
    try {
      return new CliProcess(pb.start(), out, err);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Waits for the exit code; fails the test (and kills the process) after {@code timeout}. */
  int exitCode(Duration timeout) {
    try {
      if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        close();
        throw new AssertionError(
            "redlock did not finish within "
                + timeout
                + "\nstdout:\n"
                + out()
                + "\nstderr:\n"
                + err());
      }
      return process.exitValue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  int exitCode() {
    return exitCode(Duration.ofSeconds(60));
  }

  String out() {
    return read(stdout);
  }

  String err() {
    return read(stderr);
  }

  private static String read(Path p) {
    try {
      return Files.readString(p, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  /** Sends {@code kill -SIGNAL} to the JVM. */
  void signal(String signal) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).start();
    assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(kill.exitValue()).as("kill -" + signal).isZero();
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
    }
  }

  @Override
  public String toString() {
    return "redlock pid " + process.pid() + "\nstdout:\n" + out() + "\nstderr:\n" + err();
  }
}
