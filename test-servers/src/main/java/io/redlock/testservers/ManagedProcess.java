package io.redlock.testservers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A server process started by a test: output to a log file, readiness polled with a bound, stopped
 * (and killed if need be) on {@link #close()} or at JVM exit. Also offers pause/resume/kill for
 * fault injection.
 */
public final class ManagedProcess implements AutoCloseable {
  private final String name;
  private final List<String> command;
  private final Map<String, String> environment;
  private final Path workDir;
  private final Path log;
  private final Thread shutdownHook;
  private volatile Process process;

  private ManagedProcess(
      String name, List<String> command, Map<String, String> environment, Path workDir) {
    this.name = name;
    this.command = List.copyOf(command);
    this.environment = Map.copyOf(environment);
    this.workDir = workDir;
    this.log = workDir.resolve(name + ".log");
    this.shutdownHook = new Thread(this::stopAndDelete, "stop-" + name);
  }

  /**
   * Starts {@code command} in {@code workDir} and waits until {@code ready} answers true, polling
   * every 20 ms for at most {@code startTimeout}.
   *
   * @throws IllegalStateException if the process exits or is not ready in time; the message carries
   *     the tail of its log
   */
  public static ManagedProcess start(
      String name,
      List<String> command,
      Map<String, String> environment,
      Path workDir,
      BooleanSupplier ready,
      Duration startTimeout) {
    ManagedProcess p = new ManagedProcess(name, command, environment, workDir);
    p.launch();
    p.awaitReady(ready, startTimeout);
    return p;
  }

  /** (Re)starts the same command, e.g. after {@link #kill()}, and waits until ready. */
  public void restart(BooleanSupplier ready, Duration startTimeout) {
    if (process != null && process.isAlive()) {
      throw new IllegalStateException(name + " is still running");
    }
    if (!Files.isDirectory(workDir)) {
      throw new IllegalStateException(
          name + " was closed and its files deleted: start a new server instead");
    }
    launch();
    awaitReady(ready, startTimeout);
  }

  private void launch() {
    try {
      Files.createDirectories(workDir);
      ProcessBuilder pb = new ProcessBuilder(command).directory(workDir.toFile());
      pb.environment().putAll(environment);
      pb.redirectErrorStream(true);
      pb.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
      process = pb.start();
      try {
        Runtime.getRuntime().addShutdownHook(shutdownHook);
      } catch (IllegalArgumentException alreadyAdded) {
        // restarted: the hook is registered once
      }
    } catch (IOException e) {
      throw new UncheckedIOException("could not start " + name + ": " + command, e);
    }
  }

  private void awaitReady(BooleanSupplier ready, Duration startTimeout) {
    long deadline = System.nanoTime() + startTimeout.toNanos();
    while (System.nanoTime() - deadline < 0) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            name + " exited with code " + process.exitValue() + " during start-up:\n" + logTail());
      }
      try {
        if (ready.getAsBoolean()) {
          return;
        }
      } catch (RuntimeException notYet) {
        // keep polling until the deadline
      }
      sleep(20);
    }
    destroyQuietly();
    throw new IllegalStateException(
        name + " was not ready within " + startTimeout.toMillis() + " ms:\n" + logTail());
  }

  /** The process id, for {@code kill -STOP} and friends. */
  public long pid() {
    return process.pid();
  }

  /** True while the process runs. */
  public boolean isAlive() {
    return process != null && process.isAlive();
  }

  /** Freezes the process ({@code SIGSTOP}): connections stay open, nothing is answered. */
  public void pause() {
    signal("STOP");
  }

  /** Resumes a paused process ({@code SIGCONT}). */
  public void resume() {
    signal("CONT");
  }

  /** Kills the process at once ({@code SIGKILL}), as a crash would, and waits for it to go. */
  public void kill() {
    Process p = process;
    if (p != null) {
      p.destroyForcibly();
      waitFor(p, 10);
    }
  }

  /** The last lines of the process's log. */
  public String logTail() {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    } catch (IOException e) {
      return "(no log at " + log + ")";
    }
  }

  /** The working directory. */
  public Path workDir() {
    return workDir;
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

  /**
   * Stops the process (SIGTERM, then SIGKILL after 10 s), then deletes its working directory if
   * {@link Binaries#scratchDir} made it (see {@link Binaries#KEEP_FILES_PROPERTY}). Idempotent.
   */
  @Override
  public void close() {
    stopAndDelete();
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException | IllegalArgumentException shuttingDownOrRemoved) {
      // the JVM is exiting, or the hook was removed already
    }
  }

  private void stopAndDelete() {
    destroyQuietly();
    if (!isAlive()) { // never the files of a process that would not die
      Binaries.deleteScratchDir(workDir);
    }
  }

  private void destroyQuietly() {
    Process p = process;
    if (p == null || !p.isAlive()) {
      return;
    }
    try {
      resume(); // a paused process cannot handle SIGTERM
    } catch (RuntimeException ignored) {
      // best effort
    }
    p.destroy();
    if (!waitFor(p, 10)) {
      p.destroyForcibly();
      waitFor(p, 10);
    }
  }

  private static boolean waitFor(Process p, int seconds) {
    try {
      return p.waitFor(seconds, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for a server to start", e);
    }
  }

  @Override
  public String toString() {
    return name + (process == null ? "" : " (pid " + process.pid() + ")");
  }
}
