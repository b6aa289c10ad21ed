package io.redlock.postgres.internal;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Vert.x instance of the nodes that were not given one: one per JVM, made by the first such
 * node and closed by the last one to close, so that all of them share one event-loop thread (a
 * fan-out over two PostgreSQL nodes then wakes one thread, not two). Its threads are daemon threads
 * and end when it is closed.
 */
final class SharedVertx {
  private static final Logger log = LoggerFactory.getLogger(SharedVertx.class);
  private static Vertx shared;
  private static int users;

  private SharedVertx() {}

  /** The shared instance, made if need be; every call must be paired with {@link #release}. */
  static synchronized Vertx acquire() {
    if (shared == null) {
      shared = Vertx.vertx(options());
    }
    users++;
    return shared;
  }

  /** Ends one use; the last closes the instance and waits up to {@code wait} for its threads. */
  static void release(Vertx vertx, Duration wait) {
    Vertx toClose = null;
    synchronized (SharedVertx.class) {
      if (vertx == shared && --users == 0) {
        toClose = shared;
        shared = null;
      }
    }
    if (toClose != null) {
      close(toClose, wait);
    }
  }

  /** Closes {@code vertx}, waiting for it unless called on one of its own threads. */
  static void close(Vertx vertx, Duration wait) {
    var closing = vertx.close();
    if (Context.isOnVertxThread()) {
      return; // waiting here would wait for ourselves
    }
    try {
      closing.toCompletionStage().toCompletableFuture().get(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      log.debug("Vert.x did not close within {} ms: {}", wait.toMillis(), e.toString());
    }
  }

  /**
   * One event loop (the calls of a node are a few hundred bytes each way; one thread writes and
   * reads them for every node), daemon threads so that a node never keeps the JVM alive.
   */
  static VertxOptions options() {
    return new VertxOptions()
        .setEventLoopPoolSize(1)
        .setWorkerPoolSize(1)
        .setInternalBlockingPoolSize(1)
        .setPreferNativeTransport(true) // epoll when netty-transport-native-epoll is present
        .setUseDaemonThread(true);
  }
}
