package io.redlock.postgres;

import io.redlock.postgres.internal.PgUri;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.sql.internal.KeyCodec;
import io.redlock.sql.internal.PostgresDialect;
import io.redlock.sql.internal.SqlNodeBuilder;
import io.redlock.sql.internal.TableName;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowIterator;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One PostgreSQL server as a Redlock node, on Vert.x's reactive PostgreSQL client and its pipelined
 * pool: no thread per call. A call writes its statement on a pooled connection, pipelined behind
 * those in flight there, and returns; the engine's thread then waits for the answer.
 *
 * <pre>{@code
 * LockNode a = PostgresLockNode.fromUri("postgresql://app:secret@db1:5432/app");
 * LockNode b = PostgresLockNode.fromUri(
 *     "postgresql://app:secret@db2/app?sslmode=verify-full&sslrootcert=/etc/ca.pem"
 *         + "&redlock.createTable=true");
 * LockNode c = PostgresLockNode.builder().uri("postgres://db3/app").poolSize(2).build();
 * }</pre>
 *
 * The URI is libpq's, {@code postgresql://[user[:password]@]host[:port][/database][?parameters]}
 * (or {@code postgres://}), with libpq's parameters ({@code sslmode}, {@code sslrootcert}, {@code
 * sslcert}, {@code sslkey}, {@code connect_timeout}...) and this library's options, {@code
 * redlock.table}, {@code createTable}, {@code poolSize}, {@code pipeliningLimit}, {@code
 * connectionTimeout}, {@code queryTimeout} and {@code releaseNotifications}, which set the {@link
 * Builder}'s defaults (docs/backends.md lists them all); an unknown one is an error naming it.
 *
 * <p>The table, its statements, key encoding and fencing column are those of {@code
 * redlock-backend-sql}, shared with the JDBC backend: a {@code jdbc:postgresql:} node and a {@code
 * postgresql://} node on one database and table see the same locks and counters.
 *
 * <p>Nodes built without {@link Builder#vertx} share one Vert.x instance per JVM (one event-loop
 * thread, daemon threads), made by the first and closed by the last node to close. Thread-safe.
 * Failures are transient (no connection, no answer in time) or not (wrong password, missing table,
 * a read-only server, a certificate not accepted), each naming the node and the fix; passwords
 * never appear in names or messages.
 */
public final class PostgresLockNode implements LockNode {
  private static final NodeCapabilities CAPABILITIES =
      NodeCapabilities.millisecondPrecision()
          .withFencing()
          .withStatus()
          .withClock()
          .withInspection();
  private static final String STATUS = PgStatements.numbered(PostgresDialect.statusQuery());

  private final String name;
  private final TableName table;
  private final PostgresDialect dialect;
  private final String serverTimeSql;
  private final PgClient client;
  private final PgNotifications notifications;
  private final NodeCapabilities capabilities;
  private final AtomicBoolean closed = new AtomicBoolean();

  /** Whether this node has taken fenced locks: then releases use the combined statement. */
  private volatile boolean fencedLocks;

  private PostgresLockNode(
      String name,
      TableName table,
      PostgresDialect dialect,
      PgClient client,
      PgNotifications notifications) {
    this.name = name;
    this.table = table;
    this.dialect = dialect;
    this.serverTimeSql = PgStatements.numbered(dialect.serverTimeMicros());
    this.client = client;
    this.notifications = notifications;
    this.capabilities =
        notifications == null ? CAPABILITIES : CAPABILITIES.withReleaseNotifications();
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
    return name;
  }

  /** Millisecond precision, fencing, status, clock, inspection; with notifications if on. */
  @Override
  public NodeCapabilities capabilities() {
    return capabilities;
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    byte[][] kt = check(key, token);
    Tuple params = Tuple.of(bytes(KeyCodec.hash(kt[0])), KeyCodec.display(key), bytes(kt[1]));
    return client.submit(
        "tryAcquire",
        PgClient.Use.TABLE,
        PgStatements::acquire,
        params.addLong(ttlMicros(ttl)),
        (rows, s) -> AcquireResult.of(rows.rowCount() == 1));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    byte[][] kt = check(key, token);
    boolean combined = fencedLocks;
    Tuple params = Tuple.of(bytes(KeyCodec.hash(kt[0])), bytes(kt[1]));
    return client.submit(
        "release",
        PgClient.Use.TABLE,
        s -> combined && s.fenceColumn() ? s.releaseCombined() : s.release(),
        params,
        (rows, s) -> {
          RowIterator<Row> it = rows.iterator();
          boolean released = it.hasNext() && Boolean.TRUE.equals(it.next().getBoolean(0));
          if (released || combined || !s.fenceColumn() || s.releaseKept() == null) {
            return Future.succeededFuture(released);
          }
          // a row with a fencing counter is expired, not deleted: a second statement (each of the
          // two is atomic, see the JDBC backend's LockTable.release)
          return client.run(s.releaseKept(), params).map(kept -> kept.rowCount() == 1);
        });
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    byte[][] kt = check(key, token);
    Tuple params = Tuple.of(ttlMicros(ttl), bytes(KeyCodec.hash(kt[0])), bytes(kt[1]));
    return client.submit(
        "extend",
        PgClient.Use.TABLE,
        PgStatements::extend,
        params,
        (rows, s) -> rows.rowCount() == 1);
  }

  /**
   * Conditional insert that also raises the key's counter (the table's {@code fence} column) to
   * {@code max(counter + 1, server time in µs)}, in one statement.
   */
  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    byte[][] kt = check(key, token);
    fencedLocks = true;
    Tuple params = Tuple.of(bytes(KeyCodec.hash(kt[0])), KeyCodec.display(key), bytes(kt[1]));
    return client.submit(
        "tryAcquireFenced",
        PgClient.Use.FENCE,
        PgStatements::acquireFenced,
        params.addLong(ttlMicros(ttl)),
        (rows, s) -> {
          RowIterator<Row> it = rows.iterator();
          return it.hasNext() ? AcquireResult.acquired(it.next().getLong(0)) : AcquireResult.HELD;
        });
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    byte[][] kt = check(key, token);
    LockNodeArguments.requireFence(atLeast);
    fencedLocks = true;
    Tuple params = Tuple.of(atLeast, bytes(KeyCodec.hash(kt[0])), bytes(kt[1]));
    return client.submit(
        "raiseFence",
        PgClient.Use.FENCE,
        PgStatements::raiseFence,
        params,
        (rows, s) -> rows.rowCount() == 1);
  }

  /** Incarnation (the postmaster's start), uptime and durability, asked on every call. */
  @Override
  public Reply<NodeStatus> status() {
    requireOpen();
    return client.submit(
        "status",
        PgClient.Use.NO_TABLE,
        s -> STATUS,
        Tuple.of(table.value()),
        (rows, s) -> {
          Row r = rows.iterator().next();
          return PostgresDialect.status(
              table,
              r.getOffsetDateTime(0),
              r.getLong(1),
              r.getString(2),
              r.getString(3),
              r.getString(4),
              r.getString(5),
              r.getString(6));
        });
  }

  /** Who holds {@code key}: its token and remaining time, read by one statement. */
  @Override
  public Reply<Optional<KeyHolder>> inspect(String key) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    byte[] hash = KeyCodec.hash(KeyCodec.requireStorable("lock key", key));
    return client.submit(
        "inspect",
        PgClient.Use.TABLE,
        PgStatements::inspect,
        Tuple.of(bytes(hash)),
        (rows, s) -> {
          RowIterator<Row> it = rows.iterator();
          if (!it.hasNext()) {
            return Optional.empty();
          }
          Row row = it.next();
          long micros = Math.max(0, row.getLong(1));
          return Optional.of(
              new KeyHolder(
                  KeyCodec.decode(row.getBuffer(0).getBytes()), Duration.ofNanos(micros * 1_000)));
        });
  }

  /** The server's {@code clock_timestamp()}, read afresh on every call (1 µs resolution). */
  @Override
  public Reply<Instant> serverTime() {
    requireOpen();
    return client.submit(
        "serverTime",
        PgClient.Use.NO_TABLE,
        s -> serverTimeSql,
        Tuple.tuple(),
        (rows, s) -> {
          long micros = rows.iterator().next().getLong(0);
          return Instant.ofEpochSecond(
              Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
        });
  }

  /**
   * With {@link Builder#releaseNotifications} on: calls {@code listener} when {@code key} is
   * released through a node (reactive or JDBC) that notifies on the same table; after the listening
   * connection is opened again, all listeners are called once. Expiries are not reported.
   */
  @Override
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

  /** The DDL of the node's table, for people who create it themselves. */
  public String createTableSql() {
    return dialect.ddlText(table);
  }

  /** The lock table's name. */
  public String table() {
    return table.value();
  }

  /**
   * Closes the node's connections, and the Vert.x instance if the node was the last to use the
   * shared one (never one passed to {@link Builder#vertx}). Idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    if (notifications != null) {
      notifications.close();
    }
    client.close();
  }

  /** Same as {@link #name()}: no secrets. */
  @Override
  public String toString() {
    return name;
  }

  // ---- calls ----

  /**
   * One call: the reply the engine awaits and what it runs. It is <em>sent</em> once it is {@link
   * #claimed} for the connections (at once when they have room, else when a call ends); a call the
   * engine abandons before that is dropped, never written (but a release).
   */
  // ---- helpers ----

  private static Buffer bytes(byte[] b) {
    return Buffer.buffer(b);
  }

  private long ttlMicros(Duration ttl) {
    return dialect.ttlUnits(LockNodeArguments.requireTtl(ttl, capabilities));
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

  /** Builds a {@link PostgresLockNode}. Not thread-safe. */
  public static final class Builder extends SqlNodeBuilder<Builder> {
    private PgUri uri;
    private PgConnectOptions connectOptions;
    private Integer pipeliningLimit;
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

    /** Connections to the server, at most (default 4, 1 to 64); opened as the load needs them. */
    public Builder poolSize(int size) {
      this.poolSize = requireRange("poolSize", size, 1, 64);
      return this;
    }

    /**
     * Statements in flight on one connection, at most (default 16, 1 to 256). Calls beyond {@code
     * poolSize × pipeliningLimit} wait, and are dropped, never sent, if the engine gives up on
     * them.
     */
    public Builder pipeliningLimit(int limit) {
      this.pipeliningLimit = requireRange("pipeliningLimit", limit, 1, 256);
      return this;
    }

    /** How long a call may wait for room on the connections (default 2 s, at least 100 ms). */
    public Builder connectionTimeout(Duration timeout) {
      this.connectionTimeout =
          requireAtLeast("connectionTimeout", timeout, Duration.ofMillis(100), "100 ms");
      return this;
    }

    /**
     * The server's {@code statement_timeout} for the node's statements (default 5 s, at least 100
     * ms); a call without an answer within this, the connection timeout and a second fails.
     */
    public Builder queryTimeout(Duration timeout) {
      this.queryTimeout = requireAtLeast("queryTimeout", timeout, Duration.ofMillis(100), "100 ms");
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
     * Builds the node, waiting for nothing: the first connection and the table check (or creation)
     * happen in the background, so a node that is down at start-up only fails its own calls.
     *
     * @throws IllegalStateException unless exactly one of {@link #uri} and {@link #connectOptions}
     *     was given
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
      boolean notify = first(releaseNotifications, bool(o, "releaseNotifications"), false);
      PostgresDialect dialect = new PostgresDialect();
      dialect = notify ? dialect.notifyingReleases() : dialect;
      Duration query = first(queryTimeout, duration(o, "queryTimeout"), Duration.ofSeconds(5));
      // the server ends a statement that runs longer (a lock wait, a slow disk) by itself, and the
      // connection stays usable
      PgConnectOptions connect =
          new PgConnectOptions(options)
              .addProperty("statement_timeout", Long.toString(query.toMillis()))
              .setCachePreparedStatements(true)
              .setPipeliningLimit(
                  first(pipeliningLimit, integer(o, "pipeliningLimit", 1, 256), 16));
      PgClient client =
          new PgClient(
              n,
              t,
              dialect,
              first(createTable, bool(o, "createTable"), false),
              connect,
              first(poolSize, integer(o, "poolSize", 1, 64), 4),
              first(
                  connectionTimeout,
                  duration(o, "connectionTimeout"),
                  uri == null ? null : uri.connectTimeout(),
                  Duration.ofSeconds(2)),
              query,
              vertx);
      return new PostgresLockNode(
          n,
          t,
          dialect,
          client,
          notify ? new PgNotifications(n, client.vertx(), connect, t) : null);
    }
  }
}
