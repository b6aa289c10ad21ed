package io.redlock.testservers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.testcontainers.DockerClientFactory;

/**
 * Shared plumbing of the database servers (PostgreSQL and MariaDB): environment lists, Docker
 * probe, helper commands.
 */
final class PostgresServerSupport {
  private static volatile Boolean dockerAvailable;

  private PostgresServerSupport() {}

  /** The comma-separated entries of {@code variable}, trimmed; empty if unset or blank. */
  static List<String> fromEnvironment(String variable) {
    String value = System.getenv(variable);
    if (value == null || value.isBlank()) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    for (String part : value.split(",")) {
      if (!part.isBlank()) {
        out.add(part.strip());
      }
    }
    return List.copyOf(out);
  }

  /** Hands out the entries of a list in turn, wrapping around. */
  static String next(List<String> entries, AtomicInteger cursor) {
    return entries.get(Math.floorMod(cursor.getAndIncrement(), entries.size()));
  }

  /** Whether Testcontainers can reach a Docker engine; asked once per JVM. */
  static boolean dockerAvailable() {
    Boolean known = dockerAvailable;
    if (known == null) {
      boolean found;
      try {
        found = DockerClientFactory.instance().isDockerAvailable();
      } catch (RuntimeException | LinkageError e) {
        found = false;
      }
      dockerAvailable = known = found;
    }
    return known;
  }

  /** True when this JVM runs as root (servers that refuse root then need another user). */
  static boolean runningAsRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  /**
   * Runs a short helper command, failing with its output if it does not exit 0 in time. Its output
   * goes to a temporary file, deleted in any case (not to {@code workDir}, which may be the
   * module's own folder).
   */
  static void run(Path workDir, long timeoutSeconds, String... command) {
    Path out;
    try {
      out = Files.createTempFile("redlock-helper-", ".log");
    } catch (IOException e) {
      throw new UncheckedIOException("could not create a temporary file", e);
    }
    try {
      Process p =
          new ProcessBuilder(command)
              .directory(workDir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(out.toFile())
              .start();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(
            "timed out after " + timeoutSeconds + " s: " + Arrays.toString(command));
      }
      if (p.exitValue() != 0) {
        throw new IllegalStateException(
            "exit code "
                + p.exitValue()
                + " from "
                + Arrays.toString(command)
                + ":\n"
                + Files.readString(out));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("could not run " + Arrays.toString(command), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running " + Arrays.toString(command), e);
    } finally {
      try {
        Files.deleteIfExists(out);
      } catch (IOException e) {
        // a leftover temporary file
      }
    }
  }

  /** Sends {@code signal} (e.g. {@code INT}) to a process. */
  static void signal(long pid, String signal) {
    run(Path.of(".").toAbsolutePath(), 10, "kill", "-" + signal, Long.toString(pid));
  }

  /** Whether something accepts TCP connections on 127.0.0.1:{@code port}. */
  static boolean accepts(int port) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** Waits up to {@code seconds} for a process to exit. */
  static boolean awaitExit(ManagedProcess process, int seconds) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (process.isAlive() && System.nanoTime() - deadline < 0) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return !process.isAlive();
  }

  /** Finds a binary on the PATH or in {@code /usr/lib/postgresql/N/bin}-like folders. */
  static Path requireBinary(String name, String install, String... extraDirs) {
    return Binaries.find(name, extraDirs)
        .orElseThrow(
            () ->
                new IllegalStateException(
                    "'"
                        + name
                        + "' was not found on the PATH or in "
                        + Arrays.toString(extraDirs)
                        + ": "
                        + install));
  }
}
