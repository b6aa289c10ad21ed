package io.redlock.testservers;

import static io.redlock.testservers.PostgresServerSupport.awaitExit;
import static io.redlock.testservers.PostgresServerSupport.signal;

import org.testcontainers.containers.GenericContainer;

/**
 * What {@link PostgresServer} and {@link MariaDbServer} share: a server given by URL, run in a
 * container, or started from local binaries, and for the latter the fault-injection controls.
 */
abstract class LocalSqlServer implements AutoCloseable {
  final String description;
  final ManagedProcess process;
  final GenericContainer<?> container;
  final int port;

  LocalSqlServer(
      String description, ManagedProcess process, GenericContainer<?> container, int port) {
    this.description = description;
    this.process = process;
    this.container = container;
    this.port = port;
  }

  /** The TCP port of a local server. */
  public int port() {
    requireLocal("port");
    return port;
  }

  /** True if this test started the server process itself (so it can stop and restart it). */
  public boolean isLocal() {
    return process != null;
  }

  /** True while a local server's process runs. */
  public boolean isRunning() {
    requireLocal("isRunning");
    return process.isAlive();
  }

  /** Stops a local server cleanly. */
  public abstract void stop();

  /** Kills a local server with SIGKILL, like a crash or a power cut. */
  public void kill() {
    requireLocal("kill");
    process.kill();
  }

  /** Freezes a local server (SIGSTOP): connections stay open and nothing is answered. */
  public void pause() {
    requireLocal("pause");
    process.pause();
  }

  /** Resumes a paused local server. */
  public void resume() {
    requireLocal("resume");
    process.resume();
  }

  /** Sends {@code signal} to a local server and waits for it to exit (SIGKILL after 30 s). */
  void stopWith(String operation, String signal) {
    requireLocal(operation);
    if (process.isAlive()) {
      signal(process.pid(), "CONT"); // a paused server cannot handle the shutdown signal
      signal(process.pid(), signal);
      if (!awaitExit(process, 30)) {
        process.kill();
      }
    }
  }

  void requireLocal(String operation) {
    if (process == null) {
      String type = getClass().getSimpleName();
      throw new IllegalStateException(
          operation
              + "() needs a server this test started from local binaries ("
              + description
              + " is not): obtain it with "
              + type
              + ".startLocal()");
    }
  }

  /** Stops a local server or the container; a server given by URL is left alone. */
  @Override
  public void close() {
    if (process != null) {
      try {
        stop();
      } finally {
        process.close();
      }
    }
    if (container != null) {
      container.stop();
    }
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "(" + description + ")";
  }
}
