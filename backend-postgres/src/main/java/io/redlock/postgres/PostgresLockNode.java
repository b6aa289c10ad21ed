package io.redlock.postgres;

import io.redlock.jdbc.internal.JdbcOptions;
import io.redlock.jdbc.internal.TableName;
import io.redlock.postgres.internal.PgNode;
import io.redlock.postgres.internal.PgSettings;
import io.redlock.postgres.internal.PgUri;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One PostgreSQL server as a Redlock node, on Vert.x's reactive PostgreSQL client: no thread per
 * call. A call writes its statement on a pooled connection (pipelined behind the statements already
 * in flight there) and returns; the engine's thread then waits for the answer, which the client's
 * event loop reads.
 *
 * <pre>{@code
 * LockNode a = PostgresLockNode.fromUri("postgresql://app:secret@db1:5432/app");
 * LockNode b = PostgresLockNode.fromUri(
 *     "postgresql://app:secret@db2/app?sslmode=verify-full&sslrootcert=/etc/ca.pem"
 *         + "&redlock.createTable=true");
 * LockNode c = PostgresLockNode.builder().uri("postgres://db3/app").poolSize(2).build();
 * }</pre>
 *
 * <h2>URI</h2>
 *
 * libpq's form, {@code postgresql://[user[:password]@]host[:port][/database][?parameters]} (or
 * {@code postgres://}). Parameters: {@code host}, {@code hostaddr}, {@code port}, {@code user},
 * {@code password}, {@code dbname}, {@code sslmode} ({@code disable}, {@code allow}, {@code prefer}
 * (the default), {@code require}, {@code verify-ca}, {@code verify-full}), {@code sslrootcert} (a
 * PEM file; without it the verifying modes trust the JVM's CAs), {@code sslcert} and {@code sslkey}
 * (a client certificate), {@code application_name}, {@code search_path}, {@code options} and {@code
 * connect_timeout} (seconds). As in libpq, the user defaults to the operating system's user and the
 * database to the user. This library's options start with {@code redlock.} and are taken out before
 * the client sees the URI; an unknown parameter or option is an error that names it:
 *
 * <ul>
 *   <li>{@code redlock.table}: the table (default {@code redlock_locks});
 *   <li>{@code redlock.createTable}: create the table (and add its counter column) if missing
 *       (default false: a missing table is an error that prints the DDL);
 *   <li>{@code redlock.poolSize}: connections, at most (default 4);
 *   <li>{@code redlock.pipeliningLimit}: statements in flight per connection (default 16);
 *   <li>{@code redlock.connectionTimeout}: bound on opening a connection and on a call's wait for
 *       one (default 2 s);
 *   <li>{@code redlock.queryTimeout}: the server's {@code statement_timeout} for the node's
 *       statements (default 5 s); a connection whose oldest statement has had no answer for a
 *       second longer (a frozen server, a dead path) is closed;
 *   <li>{@code redlock.releaseNotifications}: LISTEN/NOTIFY on releases (default false; see {@link
 *       Builder#releaseNotifications}).
 * </ul>
 *
 * Durations are milliseconds ({@code 500}) or carry a unit ({@code 500ms}, {@code 2s}, {@code 1m}).
 *
 * <h2>Same table as the JDBC backend</h2>
 *
 * The table, its statements, the key encoding (SHA-256 key hash, WTF-8 tokens), the fencing counter
 * column and the release marker are the JDBC backend's ({@code redlock-backend-jdbc}, whose
 * PostgreSQL dialect this module runs), so a {@code jdbc:postgresql:} node and a {@code
 * postgresql://} node on the same database and table see the same locks and counters. Every expiry
 * is computed by the server's {@code clock_timestamp()} from a relative TTL, in one statement.
 *
 * <h2>Abandoned calls</h2>
 *
 * A call made while a connection has room for it is sent: written as soon as the event loop runs. A
 * call the engine gives up on (its per-node timeout passed) while it still waits for a connection
 * (every connection full: a slow or frozen server) is dropped, never written; a sent call is read
 * to its end and its connection goes on serving calls, so a server that was frozen is used again as
 * soon as it answers.
 *
 * <h2>Threads</h2>
 *
 * Nodes built without {@link Builder#vertx} share one Vert.x instance per JVM (one event-loop
 * thread, daemon threads), made by the first and closed by the last node to close. Thread-safe.
 * {@link #close()} is idempotent.
 *
 * <p>Failures are {@link io.redlock.RedlockTransientException}s (no connection, a connection lost,
 * no answer in time) or {@link io.redlock.RedlockNonTransientException}s (wrong password, missing
 * database or table, a read-only server, a certificate not accepted), each naming the node and the
 * fix. Passwords never appear in {@link #name()}, {@link #toString()} or messages.
 */
public final class PostgresLockNode implements LockNode {
  private final PgNode node;

  private PostgresLockNode(PgNode node) {
    this.node = node;
  }

  /**
   * A node for a {@code postgresql://} or {@code postgres://} URI (see the class comment).
   *
   * @throws IllegalArgumentException for a malformed URI or an unknown or invalid option
   */
  public static PostgresLockNode fromUri(String uri) {
    return builder().uri(uri).build();
  }

  /** A node for a parsed URI, as the {@link io.redlock.spi.LockNodeProvider} receives it. */
  public static PostgresLockNode fromUri(NodeUri uri) {
    return fromUri(Objects.requireNonNull(uri, "uri").raw());
  }

  /** A builder; start from {@link Builder#uri} or {@link Builder#connectOptions}. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String name() {
    return node.name();
  }

  /**
   * Millisecond precision, fencing counters, status reports and reads of the server's clock; with
   * {@link Builder#releaseNotifications} on, release notifications too.
   */
  @Override
  public NodeCapabilities capabilities() {
    return node.capabilities();
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    return node.tryAcquire(key, token, ttl);
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    return node.release(key, token);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    return node.extend(key, token, ttl);
  }

  /**
   * Conditional insert that also raises the key's fencing counter to {@code max(counter + 1, server
   * time in µs)}, in the same statement; the counter lives in the table's {@code fence} column, as
   * for the JDBC backend's nodes.
   */
  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    return node.tryAcquireFenced(key, token, ttl);
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    return node.raiseFence(key, token, atLeast);
  }

  /**
   * The server's incarnation (the postmaster's start time), uptime and durability (fsync, {@code
   * synchronous_commit}, a logged table), asked of the server on every call.
   */
  @Override
  public Reply<NodeStatus> status() {
    return node.status();
  }

  /** Who holds {@code key}: its token and remaining time, read by one statement. */
  @Override
  public Reply<Optional<KeyHolder>> inspect(String key) {
    return node.inspect(key);
  }

  /** The server's {@code clock_timestamp()}, read afresh on every call (1 µs resolution). */
  @Override
  public Reply<Instant> serverTime() {
    return node.serverTime();
  }

  /**
   * With {@link Builder#releaseNotifications} on: calls {@code listener} when {@code key} is
   * released through any node of this library (reactive or JDBC) that notifies on the same database
   * and table. The node LISTENs on a connection of its own, opened on first use and opened again
   * after it breaks (listeners are then all called once, since releases may have been missed).
   * Expiries are not reported.
   */
  @Override
  public ReleaseSubscription onRelease(String key, Runnable listener) {
    return node.onRelease(key, listener);
  }

  /** The DDL of the node's table, for people who create it themselves. */
  public String createTableSql() {
    return node.createTableSql();
  }

  /** The lock table's name. */
  public String table() {
    return node.settings().table().value();
  }

  /**
   * Closes the node's connections, and the Vert.x instance if the node was the last to use the
   * shared one (never one passed to {@link Builder#vertx}). Idempotent.
   */
  @Override
  public void close() {
    node.close();
  }

  /** Same as {@link #name()}: no secrets. */
  @Override
  public String toString() {
    return node.name();
  }

  /** Builds a {@link PostgresLockNode}. Not thread-safe. */
  public static final class Builder {
    private PgUri uri;
    private PgConnectOptions connectOptions;
    private String name;
    private TableName table;
    private Boolean createTable;
    private Integer poolSize;
    private Integer pipeliningLimit;
    private Duration connectionTimeout;
    private Duration queryTimeout;
    private Boolean releaseNotifications;
    private Vertx vertx;

    private Builder() {}

    /**
     * The URI, with optional {@code redlock.*} options, which set this builder's defaults (its
     * setters win). Instead of {@link #connectOptions}.
     *
     * @throws IllegalArgumentException for a malformed URI or an unknown or invalid option
     */
    public Builder uri(String uri) {
      this.uri = PgUri.parse(uri);
      return this;
    }

    /**
     * Vert.x connect options of your own (copied), instead of {@link #uri}: for settings a URI
     * cannot carry. This library still sets {@code statement_timeout}, statement caching and the
     * pipelining limit.
     */
    public Builder connectOptions(PgConnectOptions options) {
      this.connectOptions = new PgConnectOptions(Objects.requireNonNull(options, "options"));
      return this;
    }

    /**
     * The node's name in messages and logs (default {@code postgresql://user@host:port/db}). Must
     * not contain secrets.
     */
    public Builder name(String name) {
      if (name == null || name.isBlank()) {
        throw new IllegalArgumentException("name must be a non-empty string");
      }
      this.name = NodeUri.redact(name.strip());
      return this;
    }

    /**
     * The table (default {@code redlock_locks}); plain identifiers only, optionally {@code
     * schema.table}.
     *
     * @throws IllegalArgumentException for any other name, saying what is allowed
     */
    public Builder table(String table) {
      this.table = new TableName(table);
      return this;
    }

    /**
     * Whether the node may create its table (and add the fencing counter column to a table of an
     * earlier version) if missing. Default false: a missing table fails the calls with the DDL to
     * run. Safe when many clients start at once.
     */
    public Builder createTable(boolean allowed) {
      this.createTable = allowed;
      return this;
    }

    /** Connections to the server, at most (default 4, 1 to 64); opened as the load needs them. */
    public Builder poolSize(int size) {
      this.poolSize = PgSettings.requireRange("poolSize", size, 1, 64);
      return this;
    }

    /**
     * Statements in flight on one connection, at most (default 16, 1 to 256). Calls beyond {@code
     * poolSize × pipeliningLimit} wait for a connection (and are dropped, never sent, if the engine
     * gives up on them first), which also bounds what a frozen server finds to do when it thaws.
     */
    public Builder pipeliningLimit(int limit) {
      this.pipeliningLimit = PgSettings.requireRange("pipeliningLimit", limit, 1, 256);
      return this;
    }

    /**
     * How long opening a connection, and a call's wait for one, may take (default 2 s, at least 100
     * ms).
     */
    public Builder connectionTimeout(Duration timeout) {
      this.connectionTimeout =
          PgSettings.requireAtLeast("connectionTimeout", timeout, Duration.ofMillis(100));
      return this;
    }

    /**
     * The server's {@code statement_timeout} for the node's statements (default 5 s, at least 100
     * ms); a connection whose oldest statement has had no answer for a second longer is closed and
     * its calls fail.
     */
    public Builder queryTimeout(Duration timeout) {
      this.queryTimeout =
          PgSettings.requireAtLeast("queryTimeout", timeout, Duration.ofMillis(100));
      return this;
    }

    /**
     * Whether releases are pushed to waiters with LISTEN/NOTIFY (default false). On: every release
     * statement also calls {@code pg_notify} on the table's channel (the channel the JDBC backend's
     * nodes use) and the node LISTENs on one connection of its own, so a contended lock is handed
     * on at once instead of at the next poll. The cost: PostgreSQL serialises the commits of all
     * transactions that notify. Turn it on for every node of the table, or none.
     */
    public Builder releaseNotifications(boolean on) {
      this.releaseNotifications = on;
      return this;
    }

    /**
     * A Vert.x instance of yours to run on (the node never closes it). Default: one instance shared
     * by the nodes of this JVM, closed with the last of them.
     */
    public Builder vertx(Vertx vertx) {
      this.vertx = Objects.requireNonNull(vertx, "vertx");
      return this;
    }

    /**
     * Builds the node. Nothing is waited for: the first connection is opened, and the table checked
     * (or created), in the background, so a node that is down at start-up only fails its own calls.
     *
     * @throws IllegalStateException if neither or both of {@link #uri} and {@link #connectOptions}
     *     were given
     * @throws IllegalArgumentException for an invalid {@code redlock.*} option
     */
    public PostgresLockNode build() {
      if ((uri == null) == (connectOptions == null)) {
        throw new IllegalStateException(
            "give exactly one of uri(\"postgresql://...\") and connectOptions(options)"
                + (uri == null ? "" : ", not both"));
      }
      Map<String, String> o = uri != null ? uri.redlock() : Map.of();
      PgConnectOptions options = uri != null ? uri.options() : connectOptions;
      TableName t =
          first(
              table,
              o.containsKey("table") ? new TableName(o.get("table")) : null,
              new TableName(TableName.DEFAULT));
      String n = name != null ? name : PgUri.name(options);
      if (name == null && !t.value().equals(TableName.DEFAULT)) {
        n = n + "?redlock.table=" + t.value();
      }
      PgSettings settings =
          new PgSettings(
              n,
              options,
              t,
              first(createTable, bool(o, "createTable"), false),
              first(poolSize, integer(o, "poolSize", 1, 64), PgSettings.DEFAULT_POOL_SIZE),
              first(
                  pipeliningLimit,
                  integer(o, "pipeliningLimit", 1, 256),
                  PgSettings.DEFAULT_PIPELINING_LIMIT),
              first(
                  connectionTimeout,
                  duration(o, "connectionTimeout"),
                  uri == null ? null : uri.connectTimeout(),
                  PgSettings.DEFAULT_CONNECT_TIMEOUT),
              first(queryTimeout, duration(o, "queryTimeout"), PgSettings.DEFAULT_QUERY_TIMEOUT),
              first(releaseNotifications, bool(o, "releaseNotifications"), false),
              vertx);
      return new PostgresLockNode(new PgNode(settings));
    }

    @SafeVarargs
    private static <T> T first(T... candidates) {
      for (T c : candidates) {
        if (c != null) {
          return c;
        }
      }
      return null;
    }

    private static Boolean bool(Map<String, String> o, String option) {
      return o.containsKey(option) ? JdbcOptions.parseBoolean(option, o.get(option)) : null;
    }

    private static Integer integer(Map<String, String> o, String option, int min, int max) {
      return o.containsKey(option) ? JdbcOptions.parseInt(option, o.get(option), min, max) : null;
    }

    private static Duration duration(Map<String, String> o, String option) {
      return o.containsKey(option) ? JdbcOptions.parseDuration(option, o.get(option)) : null;
    }
  }
}
