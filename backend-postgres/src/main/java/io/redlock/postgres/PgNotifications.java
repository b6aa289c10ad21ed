package io.redlock.postgres;

import io.redlock.sql.internal.PostgresDialect;
import io.redlock.sql.internal.ReleaseChannel;
import io.redlock.sql.internal.TableName;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.PgConnection;
import io.vertx.pgclient.pubsub.PgChannel;
import io.vertx.pgclient.pubsub.PgSubscriber;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Release notifications of one node over Vert.x's {@link PgSubscriber}: the release statements of
 * this library (JDBC or reactive nodes, when their notifications are on) call {@code pg_notify} on
 * the table's channel ({@link PostgresDialect#releaseChannel}) with the released key's hash in hex;
 * this keeps one connection of its own LISTENing there, opened when the first listener registers,
 * and calls the listeners of each released key. A lost connection is opened again after a pause
 * that doubles from 50 ms up to 2 s; after every (re)subscription all listeners are called, since
 * releases may have been missed meanwhile. A connection that only waits would not notice a dead
 * path, so every 15 s without a notification a {@code SELECT 1} checks it.
 */
final class PgNotifications extends ReleaseChannel {
  private static final Logger log = LoggerFactory.getLogger(PgNotifications.class);
  private static final long MIN_BACKOFF_MILLIS = 50;
  private static final long MAX_BACKOFF_MILLIS = 2_000;
  private static final long CHECK_EVERY_MILLIS = 15_000;

  private final Vertx vertx;
  private final PgConnectOptions options;
  private volatile long heardAt = System.nanoTime();
  private volatile PgSubscriber subscriber;
  private volatile long checkTimer = -1;

  PgNotifications(String name, Vertx vertx, PgConnectOptions options, TableName table) {
    super(name, table);
    this.vertx = vertx;
    this.options =
        new PgConnectOptions(options).addProperty("application_name", "redlock-release-listener");
  }

  @Override
  protected void start() {
    vertx.runOnContext(v -> listen());
  }

  private void listen() {
    if (closed) {
      return;
    }
    subscriber = PgSubscriber.subscriber(vertx, options);
    subscriber.reconnectPolicy(retries -> closed ? -1L : backoff(retries));
    PgChannel ch = subscriber.channel(channel);
    ch.subscribeHandler(
        v -> {
          heardAt = System.nanoTime();
          listeners.releasedAll(); // releases while not listening were missed: a wakeup is cheap
        });
    ch.handler(
        payload -> {
          heardAt = System.nanoTime();
          listeners.released(payload);
        });
    connect(0);
    checkTimer = vertx.setPeriodic(CHECK_EVERY_MILLIS, id -> checkPath());
  }

  private static long backoff(int retries) {
    return Math.min(MAX_BACKOFF_MILLIS, MIN_BACKOFF_MILLIS << Math.min(6, retries));
  }

  /**
   * The first connection: PgSubscriber retries only connections that were up once, so a failed
   * first attempt is retried here.
   */
  private void connect(int failures) {
    if (closed) {
      return;
    }
    subscriber
        .connect()
        .onFailure(
            e -> {
              if (failures == 0) {
                log.debug(
                    "{}: release notifications not yet listening ({}); trying again",
                    name,
                    PgErrors.detail(e));
              }
              subscriber.close(); // lets connect() try again; the channel stays registered
              vertx.setTimer(backoff(failures), id -> connect(failures + 1));
            });
  }

  private void checkPath() {
    if (closed || subscriber == null) {
      return;
    }
    PgConnection c = subscriber.actualConnection();
    if (c == null || System.nanoTime() - heardAt < CHECK_EVERY_MILLIS * 1_000_000L) {
      return;
    }
    long timer = vertx.setTimer(10_000, id -> c.close()); // no answer: listen again
    c.query("SELECT 1")
        .execute()
        .onComplete(
            ar -> {
              vertx.cancelTimer(timer);
              if (ar.succeeded()) {
                heardAt = System.nanoTime();
              } else {
                c.close(); // PgSubscriber connects again
              }
            });
  }

  /** Stops listening and closes the connection. Idempotent. */
  @Override
  public void close() {
    closed = true;
    if (started()) {
      try {
        vertx.runOnContext(
            v -> {
              if (checkTimer >= 0) {
                vertx.cancelTimer(checkTimer);
              }
              if (subscriber != null) {
                subscriber.close();
              }
            });
      } catch (RuntimeException e) {
        // the event loop is gone: so is the connection
      }
    }
  }
}
