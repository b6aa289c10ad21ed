package io.redlock.postgres.internal;

import io.redlock.jdbc.internal.KeyCodec;
import io.redlock.jdbc.internal.PostgresDialect;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The implementation behind {@code PostgresLockNode}: argument checks, key encoding (the JDBC
 * backend's {@link KeyCodec}, so that both backends store a key the same way), and the calls, which
 * {@link PgConnections} writes on its event loop.
 */
public final class PgNode {
  private static final NodeCapabilities CAPABILITIES =
      NodeCapabilities.millisecondPrecision()
          .withFencing()
          .withStatus()
          .withClock()
          .withInspection();
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

  private final PgSettings settings;
  private final String name;
  private final NodeCapabilities capabilities;
  private final PostgresDialect dialect;
  private final Vertx vertx;
  private final boolean sharedVertx;
  private final PgConnections connections;
  private final PgNotifications notifications;
  private final AtomicBoolean closed = new AtomicBoolean();

  /**
   * Builds a node; nothing is waited for: the first connection is opened, and the table checked, in
   * the background.
   */
  public PgNode(PgSettings settings) {
    this.settings = settings;
    this.name = settings.name();
    PostgresDialect base = new PostgresDialect();
    this.dialect = settings.releaseNotifications() ? base.notifyingReleases() : base;
    this.sharedVertx = settings.vertx() == null;
    this.vertx = sharedVertx ? SharedVertx.acquire() : settings.vertx();
    PgConnectOptions options = new PgConnectOptions(settings.connectOptions());
    // the server ends a statement that runs longer (a lock wait, a slow disk) by itself, and
    // the connection stays usable; Vert.x queues nothing beyond this node's own limit
    options
        .addProperty("statement_timeout", Long.toString(settings.queryTimeout().toMillis()))
        .setCachePreparedStatements(true)
        .setPipeliningLimit(settings.pipeliningLimit() + 2);
    try {
      this.connections =
          new PgConnections(
              name,
              vertx,
              options,
              dialect,
              settings.table(),
              settings.createTable(),
              settings.poolSize(),
              settings.pipeliningLimit(),
              settings.connectTimeout(),
              settings.queryTimeout());
    } catch (RuntimeException e) {
      if (sharedVertx) {
        SharedVertx.release(vertx, CLOSE_WAIT);
      }
      throw e;
    }
    this.notifications =
        settings.releaseNotifications()
            ? new PgNotifications(name, vertx, options, settings.table())
            : null;
    this.capabilities =
        notifications == null ? CAPABILITIES : CAPABILITIES.withReleaseNotifications();
    connections.warmUp();
  }

  public String name() {
    return name;
  }

  public NodeCapabilities capabilities() {
    return capabilities;
  }

  public PgSettings settings() {
    return settings;
  }

  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    byte[][] kt = check(key, token);
    long micros = dialect.ttlUnits(LockNodeArguments.requireTtl(ttl, capabilities));
    return connections.submit(
        PgOp.acquire(KeyCodec.hash(kt[0]), KeyCodec.display(key), kt[1], micros));
  }

  /** Whether this node has taken fenced locks: then releases use the combined statement. */
  private volatile boolean fencedLocks;

  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    byte[][] kt = check(key, token);
    fencedLocks = true;
    long micros = dialect.ttlUnits(LockNodeArguments.requireTtl(ttl, capabilities));
    return connections.submit(
        PgOp.acquireFenced(KeyCodec.hash(kt[0]), KeyCodec.display(key), kt[1], micros));
  }

  public Reply<Boolean> release(String key, String token) {
    byte[][] kt = check(key, token);
    return connections.submit(PgOp.release(KeyCodec.hash(kt[0]), kt[1], fencedLocks));
  }

  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    byte[][] kt = check(key, token);
    long micros = dialect.ttlUnits(LockNodeArguments.requireTtl(ttl, capabilities));
    return connections.submit(PgOp.extend(KeyCodec.hash(kt[0]), kt[1], micros));
  }

  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    byte[][] kt = check(key, token);
    fencedLocks = true;
    if (atLeast <= 0) {
      throw new IllegalArgumentException(
          "atLeast must be a positive fencing counter, got " + atLeast);
    }
    return connections.submit(PgOp.raiseFence(KeyCodec.hash(kt[0]), kt[1], atLeast));
  }

  public Reply<NodeStatus> status() {
    requireOpen();
    return connections.submit(PgOp.status(settings.table()));
  }

  public Reply<Optional<KeyHolder>> inspect(String key) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    byte[] k = KeyCodec.requireStorable("lock key", key);
    return connections.submit(PgOp.inspect(KeyCodec.hash(k)));
  }

  public Reply<Instant> serverTime() {
    requireOpen();
    return connections.submit(PgOp.serverTime());
  }

  /** Registers a release listener; only when notifications are on (else the caller refuses). */
  public ReleaseSubscription onRelease(String key, Runnable listener) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    if (notifications == null) {
      throw new IllegalStateException(
          name
              + " does not push release notifications (capabilities().releaseNotifications() is"
              + " false): turn them on with redlock.releaseNotifications=true");
    }
    return notifications.register(
        KeyCodec.hash(KeyCodec.requireStorable("lock key", key)), listener);
  }

  /** Whether the release listener is subscribed now (false without notifications); for tests. */
  public boolean notificationsSubscribed() {
    return notifications != null && notifications.subscribed();
  }

  /** The DDL of the table, for people who create it themselves. */
  public String createTableSql() {
    return dialect.ddlText(settings.table());
  }

  /** Closes the connections, and the Vert.x instance if this was its last node. Idempotent. */
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    if (notifications != null) {
      notifications.close();
    }
    java.util.concurrent.CompletableFuture<Void> closing = connections.close();
    // on an event loop (a callback closing its node) waiting would wait for ourselves
    if (!io.vertx.core.Context.isOnVertxThread()) {
      try {
        closing.get(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (Exception e) {
        // closing anyway
      }
    }
    if (sharedVertx) {
      SharedVertx.release(vertx, CLOSE_WAIT);
    }
  }

  private void requireOpen() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
  }

  private byte[][] check(String key, String token) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    return new byte[][] {
      KeyCodec.requireStorable("lock key", key), KeyCodec.requireStorable("lock token", token)
    };
  }
}
