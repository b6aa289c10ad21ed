package io.redlock.chaos;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A {@link ChaosClient} JVM started by a test: {@code java.home}'s {@code java} on the test class
 * path, its output in {@code NAME.log}, its events in {@code NAME.events}. It can be paused ({@code
 * SIGSTOP}), resumed and killed ({@code destroyForcibly}, SIGKILL) at any moment. Every client
 * still alive is killed by {@link #close()} and, should the test JVM exit first, by a shutdown hook
 * (and the client halts by itself once its parent is gone).
 */
public final class ClientProcess implements AutoCloseable {
  private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> LIVE.forEach(Process::destroyForcibly), "kill-chaos-clients"));
  }

  private final String name;
  private final Path events;
  private final Path go;
  private final Process process;
  private long tailOffset;
  private volatile boolean killed;

  private ClientProcess(String name, Path events, Path go, Process process) {
    this.name = name;
    this.events = events;
    this.go = go;
    this.process = process;
  }

  /**
   * Class path entries put before the test class path of client JVMs: set the system property
   * {@value #CLASS_PATH_PREFIX} to run the clients on another build of the library (e.g. the
   * previous release's engine and backend jars) while the test itself stays as it is.
   */
  public static final String CLASS_PATH_PREFIX = "chaos.clientClassPathPrefix";

  /**
   * The class path for client JVMs: surefire's test class path when running under surefire (without
   * a manifest-only jar it equals {@code java.class.path}; with one, {@code java.class.path} names
   * only that jar), else {@code java.class.path}; after {@value #CLASS_PATH_PREFIX} if set.
   */
  public static String classPath() {
    String surefire = System.getProperty("surefire.test.class.path");
    String cp =
        surefire != null && !surefire.isBlank() ? surefire : System.getProperty("java.class.path");
    String prefix = System.getProperty(CLASS_PATH_PREFIX, "");
    return prefix.isBlank() ? cp : prefix + java.io.File.pathSeparator + cp;
  }

  /** Starts a client named {@code name} in {@code dir}; it waits for {@link #go}. */
  public static ClientProcess start(String name, Path dir, ClientOptions options) {
    try {
      Files.createDirectories(dir);
      Path events = dir.resolve(name + ".events");
      Path go = dir.resolve(name + ".go");
      Files.deleteIfExists(events);
      Files.deleteIfExists(go);
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      // Small and quick to start: four JVMs share two cores with the servers.
      command.addAll(
          List.of(
              "-Xmx128m",
              "-Xss512k",
              "-XX:+UseSerialGC",
              "-XX:TieredStopAtLevel=1",
              "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
              "-Dorg.slf4j.simpleLogger.showDateTime=true",
              "-cp",
              classPath(),
              ChaosClient.class.getName(),
              "--jvm=" + name,
              "--out=" + events,
              "--go=" + go));
      command.addAll(options.toArgs());
      ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile());
      pb.redirectErrorStream(true);
      pb.redirectOutput(ProcessBuilder.Redirect.to(dir.resolve(name + ".log").toFile()));
      Process p = pb.start();
      LIVE.add(p);
      return new ClientProcess(name, events, go, p);
    } catch (IOException e) {
      throw new UncheckedIOException("could not start client " + name, e);
    }
  }

  /** The client's name (its {@code jvm} field in events). */
  public String name() {
    return name;
  }

  /** The event file. */
  public Path events() {
    return events;
  }

  /** The process id. */
  public long pid() {
    return process.pid();
  }

  /** True if {@link #kill()} was called. */
  public boolean killed() {
    return killed;
  }

  /** True while the JVM runs. */
  public boolean isAlive() {
    return process.isAlive();
  }

  /** Waits until the client wrote its {@code S} line (connected); false if it did not in time. */
  public boolean awaitReady(long timeoutMillis) {
    return awaitLine(l -> l.startsWith("S "), timeoutMillis) != null;
  }

  /**
   * Tells the client to start now and stop at {@code until} (nanoTime): writes the go file
   * atomically.
   */
  public void go(long start, long until) {
    try {
      Path tmp = go.resolveSibling(go.getFileName() + ".tmp");
      Files.writeString(tmp, start + " " + until + "\n", StandardCharsets.US_ASCII);
      Files.move(tmp, go, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Reads the event file from where the last call stopped and returns the first complete line that
   * matches, polling every 2 ms for up to {@code timeoutMillis}; null if none came.
   */
  public String awaitLine(Predicate<String> matches, long timeoutMillis) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    StringBuilder pending = new StringBuilder();
    while (true) {
      try (RandomAccessFile f = new RandomAccessFile(events.toFile(), "r")) {
        f.seek(tailOffset);
        byte[] buf = new byte[(int) Math.min(1 << 20, Math.max(0, f.length() - tailOffset))];
        int n = f.read(buf);
        if (n > 0) {
          String text = new String(buf, 0, n, StandardCharsets.US_ASCII);
          int consumed = 0;
          int nl;
          while ((nl = text.indexOf('\n', consumed)) >= 0) {
            String line = text.substring(consumed, nl);
            consumed = nl + 1;
            if (matches.test(line)) {
              tailOffset += consumed;
              return line;
            }
          }
          tailOffset += consumed;
        }
      } catch (IOException notYet) {
        // the file appears once the client opened it
      }
      if (System.nanoTime() - deadline > 0) {
        return null;
      }
      sleep(2);
    }
  }

  /** Freezes the JVM ({@code SIGSTOP}): a holder paused at an arbitrary point, e.g. a long GC. */
  public void pause() {
    signal("STOP");
  }

  /** Resumes a JVM frozen by {@link #pause()}. */
  public void resume() {
    signal("CONT");
  }

  private void signal(String signal) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid())).start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + signal + " " + pid() + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Kills the JVM at once ({@code destroyForcibly}: SIGKILL) and waits for it to be gone. */
  public void kill() {
    killed = true;
    process.destroyForcibly();
    waitFor(10_000);
    LIVE.remove(process);
  }

  /**
   * Waits up to {@code timeoutMillis} for the client to end by itself.
   *
   * @return its exit status, or -1 if it still runs
   */
  public int waitFor(long timeoutMillis) {
    try {
      if (process.waitFor(timeoutMillis, TimeUnit.MILLISECONDS)) {
        LIVE.remove(process);
        return process.exitValue();
      }
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  /** The last lines of the client's own output (stack traces, warnings). */
  public String logTail() {
    try {
      List<String> lines = Files.readAllLines(events.resolveSibling(name + ".log"));
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    } catch (IOException e) {
      return "(no log)";
    }
  }

  /** Kills the client if it still runs (resuming it first, should it be paused). Idempotent. */
  @Override
  public void close() {
    if (process.isAlive()) {
      try {
        resume();
      } catch (RuntimeException ignored) {
        // it is being killed anyway
      }
      kill();
    }
    LIVE.remove(process);
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  @Override
  public String toString() {
    return "client " + name + " (pid " + process.pid() + ")";
  }
}
