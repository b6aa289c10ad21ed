package io.redlock.jdbc;

import io.redlock.RedlockNonTransientException;
import io.redlock.jdbc.internal.BuiltInPool;
import io.redlock.jdbc.internal.JdbcOptions;
import io.redlock.jdbc.internal.LockTable;
import io.redlock.jdbc.internal.PgReleaseNotifications;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.spi.support.Replies;
import io.redlock.sql.internal.KeyCodec;
import io.redlock.sql.internal.SqlNodeBuilder;
import io.redlock.sql.internal.TableName;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * A lock node on a SQL database: PostgreSQL, MariaDB/MySQL, SQLite or H2. Every operation is one
 * atomic statement at the default isolation level (except two cases that take a second atomic
 * statement: release of a key with a fencing counter on MariaDB/MySQL and SQLite, and a {@code
 * raiseFence} that changes nothing on MariaDB/MySQL), on a connection borrowed for that operation
 * only, and every expiry is computed by the database server's clock from a relative TTL.
 *
 * <p>Create one from a JDBC URL (a HikariCP pool is built inside) or from your own {@link
 * DataSource}:
 *
 * <pre>{@code
 * LockNode a = JdbcLockNode.builder("jdbc:postgresql://db1:5432/app?user=app&password=secret")
 *     .createTable(true)
 *     .build();
 * LockNode b = JdbcLockNode.builder(myDataSource).name("orders-db").table("locks.redlock").build();
 * }</pre>
 *
 * <p>URLs may carry this library's options in their query, prefixed with {@code redlock.} and
 * removed before the URL reaches the driver: {@code redlock.table}, {@code redlock.createTable},
 * {@code redlock.poolSize}, {@code redlock.connectionTimeout}, {@code redlock.queryTimeout}, {@code
 * redlock.releaseNotifications}. The same URLs work with {@link io.redlock.spi.LockNodeProvider}
 * lookup.
 *
 * <p><b>Fencing.</b> Every key has a counter in the table's {@code fence} column that outlives the
 * lock: {@link #tryAcquireFenced} sets it to {@code max(counter + 1, server time in microseconds)}
 * in the same statement that takes the key, and release keeps the row of a key with a counter
 * (expired, its token cleared) instead of deleting it. Keys never acquired with fencing are deleted
 * on release as before. On a durable database the counter is never lost; where it can be (an
 * in-memory H2 database, a crash of a non-durable server, a table dropped and recreated) the time
 * floor still makes the next counter larger than any before, as long as the server's clock does not
 * go back. A table created by an earlier version lacks the column: the node adds it when allowed to
 * create tables, otherwise fencing calls fail with the {@code ALTER TABLE} to run while plain locks
 * keep working.
 *
 * <p><b>Status.</b> {@link #status} reports the database's incarnation, uptime and durability:
 * PostgreSQL's postmaster start time and whether fsync, {@code synchronous_commit} and the table's
 * logging make commits durable; MariaDB/MySQL's start time and whether the table is InnoDB with
 * {@code innodb_flush_log_at_trx_commit=1}; for SQLite and H2 an identity kept in a small {@code
 * <table>_incarnation} table (in H2 a {@code NOT PERSISTENT} one, so that it changes whenever the
 * database is opened anew).
 *
 * <p>Blocking JDBC calls run on an executor of the node's (a virtual thread per call where the JDK
 * has them, else daemon threads, up to 256) so that the engine can ask many nodes at once; each
 * statement is bounded by the driver's own query timeout ({@link Builder#queryTimeout}), and a
 * reply that is not awaited long enough ends as a node timeout. The JDBC driver itself is not
 * bundled: add the one for your database. For PostgreSQL without a thread per call, see {@code
 * redlock-backend-postgres}.
 *
 * <p><b>Failures to connect.</b> The built-in pool connects lazily, in the background, and retries.
 * While it has no connection and its last attempt to open one failed for a reason that a retry does
 * not cure (a wrong password, a database that does not exist), calls fail at once with that cause,
 * as a {@link RedlockNonTransientException}, instead of waiting for the connection timeout: a node
 * timeout is far shorter, and the failure would look like a node that does not answer. The first
 * connection the pool opens (the password was fixed on the server, say) ends this. Other failures
 * to connect (refused, the server starting up) are transient, and a call waits for a connection up
 * to the connection timeout.
 */
public final class JdbcLockNode implements LockNode {
  private static final int MAX_THREADS = 256;
  private static final NodeCapabilities CAPABILITIES =
      NodeCapabilities.millisecondPrecision()
          .withFencing()
          .withStatus()
          .withClock()
          .withInspection();

  private final String name;
  private final LockTable table;
  private final BuiltInPool pool;
  private final ExecutorService executor;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final NodeCapabilities capabilities;

  /** PostgreSQL's LISTEN/NOTIFY for nodes built from a URL; null otherwise. */
  private final PgReleaseNotifications notifications;

  private JdbcLockNode(
      String name, LockTable table, BuiltInPool pool, PgReleaseNotifications notifications) {
    this.name = name;
    this.table = table;
    this.pool = pool;
    this.notifications = notifications;
    this.capabilities =
        notifications == null ? CAPABILITIES : CAPABILITIES.withReleaseNotifications();
    this.executor = newExecutor(name);
  }

  /**
   * A virtual thread per call where the JDK has them (21 and later); else daemon threads, handed
   * each call directly (the thread that went idle last takes it, its caches warm) and ending after
   * 30 s idle, up to {@value #MAX_THREADS} at once: beyond that a call fails at once (a "no" vote)
   * instead of piling up behind a stalled database.
   */
  private static ExecutorService newExecutor(String name) {
    try {
      return (ExecutorService)
          Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
    } catch (ReflectiveOperationException beforeJava21) {
      return new ThreadPoolExecutor(
          0,
          MAX_THREADS,
          30,
          TimeUnit.SECONDS,
          new SynchronousQueue<>(),
          r -> {
            Thread t = new Thread(r, "redlock-jdbc " + name);
            t.setDaemon(true);
            return t;
          });
    }
  }

  /**
   * A node on {@code jdbcUrl} with the settings of its {@code redlock.*} options; see {@link
   * #builder(String)}.
   *
   * @throws IllegalArgumentException if it is not a JDBC URL or has a bad {@code redlock.*} option
   */
  public static JdbcLockNode fromUri(String jdbcUrl) {
    return builder(jdbcUrl).build();
  }

  /** A node for a parsed URI, as the {@link io.redlock.spi.LockNodeProvider} receives it. */
  public static JdbcLockNode fromUri(NodeUri uri) {
    return fromUri(Objects.requireNonNull(uri, "uri").raw());
  }

  /**
   * A builder for a node on {@code jdbcUrl}, e.g. {@code jdbc:postgresql://host:5432/db}, {@code
   * jdbc:mariadb://host:3306/db}, {@code jdbc:sqlite:/var/lib/app/locks.db}, {@code
   * jdbc:h2:mem:locks}. {@code redlock.*} options in the URL's query set the builder's defaults.
   *
   * @throws IllegalArgumentException if it is not a JDBC URL or has a bad {@code redlock.*} option
   */
  public static Builder builder(String jdbcUrl) {
    Objects.requireNonNull(jdbcUrl, "jdbcUrl");
    return new Builder(jdbcUrl.strip(), null);
  }

  /**
   * A builder for a node on the caller's own {@link DataSource} (its pool, its credentials). The
   * node borrows one connection per operation and never closes the DataSource. For MariaDB/MySQL
   * the connections must report affected rows ({@code useAffectedRows=true}); this is checked.
   */
  public static Builder builder(DataSource dataSource) {
    return new Builder(null, Objects.requireNonNull(dataSource, "dataSource"));
  }

  @Override
  public String name() {
    return name;
  }

  /**
   * Millisecond precision on every database (SQLite's clock has no finer resolution), fencing
   * counters, status reports and reads of the database's clock; on PostgreSQL nodes built from a
   * URL with {@link Builder#releaseNotifications} on, also release notifications ({@link
   * #onRelease}).
   */
  @Override
  public NodeCapabilities capabilities() {
    return capabilities;
  }

  /**
   * PostgreSQL nodes built from a URL with {@link Builder#releaseNotifications} on: calls {@code
   * listener} when {@code key} is released through any node of this library on the same database
   * and table. Every release statement notifies the table's channel ({@code pg_notify}, delivered
   * when it commits); the node LISTENs on a connection of its own, opened on first use and opened
   * again after it breaks (listeners are then all called once, since releases may have been
   * missed). Expiries are not reported.
   */
  @Override
  public ReleaseSubscription onRelease(String key, Runnable listener) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    if (notifications == null) {
      return LockNode.super.onRelease(key, listener);
    }
    return notifications.register(
        KeyCodec.hash(KeyCodec.requireStorable("lock key", key)), listener);
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    byte[][] kt = check(key, token);
    Duration checked = LockNodeArguments.requireTtl(ttl, capabilities());
    return call(() -> table.acquire(key, kt[0], kt[1], checked, false));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    byte[][] kt = check(key, token);
    // a release is run even when the engine stops waiting for it: see Reply.abandon
    return Replies.supplyAsync(() -> table.release(kt[0], kt[1]), executor, name, false);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    byte[][] kt = check(key, token);
    Duration checked = LockNodeArguments.requireTtl(ttl, capabilities());
    return call(() -> table.extend(kt[0], kt[1], checked));
  }

  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    byte[][] kt = check(key, token);
    Duration checked = LockNodeArguments.requireTtl(ttl, capabilities());
    return call(() -> table.acquire(key, kt[0], kt[1], checked, true));
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    byte[][] kt = check(key, token);
    LockNodeArguments.requireFence(atLeast);
    return call(() -> table.raiseFence(kt[0], kt[1], atLeast));
  }

  @Override
  public Reply<NodeStatus> status() {
    requireOpen();
    return call(table::status);
  }

  /**
   * The database's clock, read afresh by one statement on the node's executor: PostgreSQL {@code
   * clock_timestamp()}, MariaDB/MySQL {@code UTC_TIMESTAMP(6)} (both 1 µs), H2 {@code
   * CURRENT_TIMESTAMP(9)} (the clock of the JVM running the database), SQLite {@code
   * julianday('now')} (1 ms; always this machine's clock, read by the SQLite library in this
   * process). A true instant whatever the session's time zone. For diagnostics only.
   */
  @Override
  public Reply<Instant> serverTime() {
    requireOpen();
    return call(table::serverTime);
  }

  /** Who holds {@code key}: its token and remaining time, read by one statement. */
  @Override
  public Reply<Optional<KeyHolder>> inspect(String key) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    return call(() -> table.inspect(key));
  }

  /**
   * The DDL of this node's table in its database's dialect (all dialects before the first
   * successful connection), for people who create the table themselves.
   */
  public String createTableSql() {
    return table.ddl();
  }

  /** Runs {@code operation} on the node's executor; dropped if abandoned before it starts. */
  private <T> Reply<T> call(Supplier<T> operation) {
    return Replies.supplyAsync(operation, executor, name);
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

  /**
   * Stops the executor (calls under way may finish for a moment) and closes the built-in pool; a
   * DataSource given by the caller stays open. Idempotent.
   *
   * <p>On a node that is down, close does not wait for what cannot succeed: while the built-in pool
   * has no connection, a call can only be waiting for one until the connection timeout, so it is
   * interrupted at once instead of awaited; and HikariCP's own shutdown, which then waits up to its
   * login timeout for the connection attempt under way, finishes on a daemon thread.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    executor.shutdown();
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
      while (!executor.awaitTermination(10, TimeUnit.MILLISECONDS)
          && System.nanoTime() - deadline < 0
          && (pool == null || !pool.unconnected())) {
        // calls under way (a release, say) may still finish
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    executor.shutdownNow();
    if (notifications != null) {
      notifications.close();
    }
    if (pool != null && pool.unconnected()) {
      Thread closer = new Thread(pool::close, "redlock-jdbc-close " + name);
      closer.setDaemon(true);
      closer.start();
    } else if (pool != null) {
      pool.close();
    }
  }

  @Override
  public String toString() {
    return name;
  }

  /** Builds a {@link JdbcLockNode}. Not thread-safe. */
  public static final class Builder extends SqlNodeBuilder<Builder> {
    private final String url;
    private final DataSource dataSource;
    private final JdbcOptions options;

    private Builder(String url, DataSource dataSource) {
      this.url = url;
      this.dataSource = dataSource;
      if (url != null) {
        JdbcOptions.subprotocol(url); // rejects non-JDBC URLs early
        this.options = JdbcOptions.parse(url);
        Map<String, String> o = options.options();
        if (o.containsKey("table")) {
          table(o.get("table"));
        }
        createTable = bool(o, "createTable");
        poolSize = integer(o, "poolSize", 1, 256);
        Duration connect = duration(o, "connectionTimeout");
        if (connect != null) {
          connectionTimeout(connect);
        }
        Duration query = duration(o, "queryTimeout");
        if (query != null) {
          queryTimeout(query);
        }
        releaseNotifications = bool(o, "releaseNotifications");
      } else {
        this.options = null;
      }
    }

    /**
     * Connections in the built-in pool (default 8, 1 to 256). A lock operation holds a connection
     * for one statement only; size it to the calls one client has in flight on the node at once
     * (about its threads that lock at the same time). Ignored for a caller's DataSource.
     */
    public Builder poolSize(int size) {
      this.poolSize = requireRange("poolSize", size, 1, 256);
      return this;
    }

    /**
     * How long to wait for a connection from the built-in pool, including opening one (default 2 s,
     * at least 250 ms). A database that refuses the connection for good (a wrong password, an
     * unknown database) fails calls at once instead, with its reason. Ignored for a caller's
     * DataSource.
     */
    public Builder connectionTimeout(Duration timeout) {
      this.connectionTimeout =
          requireAtLeast(
              "connectionTimeout", timeout, Duration.ofMillis(250), "250 ms (HikariCP's minimum)");
      return this;
    }

    /**
     * The statement timeout (default 5 s, whole seconds as JDBC counts them, at least 1 s). A lock
     * statement that takes this long is cancelled and reported as a transient failure.
     */
    public Builder queryTimeout(Duration timeout) {
      this.queryTimeout =
          requireAtLeast(
              "queryTimeout", timeout, Duration.ofSeconds(1), "1 s (JDBC counts whole seconds)");
      return this;
    }

    /**
     * Builds the node. Nothing is waited for: the built-in pool opens its first connection in the
     * background, and the table is checked (or created) on first use, so a node that is down at
     * start-up only fails its own calls.
     *
     * @throws RedlockNonTransientException if no JDBC driver accepts the URL
     */
    public JdbcLockNode build() {
      TableName table = tableOrDefault();
      boolean createTable = first(this.createTable, false);
      Duration queryTimeout = first(this.queryTimeout, Duration.ofSeconds(5));
      Duration connectionTimeout = first(this.connectionTimeout, Duration.ofSeconds(2));
      if (dataSource != null) {
        String n =
            name != null ? name : "jdbc:datasource(" + NodeUri.redact(dataSource.toString()) + ")";
        LockTable t =
            new LockTable(dataSource::getConnection, n, table, createTable, queryTimeout, null);
        return new JdbcLockNode(n, t, null, null);
      }
      String n = name != null ? name : options.displayName();
      String subprotocol = JdbcOptions.subprotocol(url);
      options.requireDriver(n);
      BuiltInPool pool =
          new BuiltInPool(
              options,
              options.driverProperties(queryTimeout, connectionTimeout),
              first(poolSize, 8),
              connectionTimeout);
      LockTable t =
          new LockTable(
              pool::borrow, n, table, createTable, queryTimeout, LockTable.dialectFor(subprotocol));
      PgReleaseNotifications notifications = null;
      if (first(releaseNotifications, false) && subprotocol.equals("postgresql")) {
        t.notifyReleases();
        notifications =
            new PgReleaseNotifications(n, () -> options.openListener(connectionTimeout), table);
      }
      return new JdbcLockNode(n, t, pool, notifications);
    }
  }
}
