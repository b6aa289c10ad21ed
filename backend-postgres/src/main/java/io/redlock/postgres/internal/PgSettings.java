package io.redlock.postgres.internal;

import io.redlock.jdbc.internal.TableName;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import java.time.Duration;
import java.util.Objects;

/**
 * Everything a node is built from, checked.
 *
 * @param name the node's name (no secrets)
 * @param connectOptions where and how to connect (copied; this library's settings are added)
 * @param table the lock table
 * @param createTable whether a missing table (or counter column) may be created
 * @param poolSize connections, at most
 * @param pipeliningLimit statements in flight per connection, at most
 * @param connectTimeout bound on opening a connection and on waiting for one
 * @param queryTimeout the server's {@code statement_timeout} for the node's statements; a
 *     connection without an answer for a second longer is closed
 * @param releaseNotifications whether releases notify the table's channel and the node listens
 * @param vertx the caller's Vert.x instance (never closed by the node), or null for the shared one
 */
public record PgSettings(
    String name,
    PgConnectOptions connectOptions,
    TableName table,
    boolean createTable,
    int poolSize,
    int pipeliningLimit,
    Duration connectTimeout,
    Duration queryTimeout,
    boolean releaseNotifications,
    Vertx vertx) {

  /** Default {@link #poolSize}. */
  public static final int DEFAULT_POOL_SIZE = 4;

  /** Default {@link #pipeliningLimit}. */
  public static final int DEFAULT_PIPELINING_LIMIT = 16;

  /** Default {@link #connectTimeout}. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);

  /** Default {@link #queryTimeout}. */
  public static final Duration DEFAULT_QUERY_TIMEOUT = Duration.ofSeconds(5);

  /** Validates. */
  public PgSettings {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(connectOptions, "connectOptions");
    Objects.requireNonNull(table, "table");
    requireRange("poolSize", poolSize, 1, 64);
    requireRange("pipeliningLimit", pipeliningLimit, 1, 256);
    requireAtLeast("connectionTimeout", connectTimeout, Duration.ofMillis(100));
    requireAtLeast("queryTimeout", queryTimeout, Duration.ofMillis(100));
  }

  /** Throws unless {@code min <= value <= max}, naming the setting. */
  public static int requireRange(String setting, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(
          setting + " must be from " + min + " to " + max + ", got " + value);
    }
    return value;
  }

  /** Throws unless {@code value >= min}, naming the setting. */
  public static Duration requireAtLeast(String setting, Duration value, Duration min) {
    Objects.requireNonNull(value, setting);
    if (value.compareTo(min) < 0) {
      throw new IllegalArgumentException(
          setting + " must be at least " + min.toMillis() + " ms, got " + value.toMillis() + " ms");
    }
    return value;
  }
}
