package io.redlock.redis;

import io.redlock.redis.RedisCall.Kind;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.spi.support.Replies;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;
import org.apache.commons.pool2.PooledObject;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionFactory;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Protocol;

/**
 * One Redis server as a Redlock node, over Jedis and its connection pool.
 *
 * <pre>{@code
 * LockNode a = RedisLockNode.fromUri("rediss://app:s3cret@10.0.0.6:6380/2?keyPrefix=locks:");
 * LockNode b = RedisLockNode.builder().host("10.0.0.7").password(secret).build();
 * }</pre>
 *
 * <p>{@code redis://[user:password@]host[:port][/database][?option=value&...]} ({@code rediss://}
 * for TLS); the options are the {@link Builder}'s methods. A call writes its command on an idle
 * pooled connection and the reply is read when awaited, so one thread can ask many nodes at once.
 * Commands, fencing counters, status and release notifications: see {@code docs/backends.md}.
 * Thread-safe.
 */
public final class RedisLockNode implements LockNode {
  private static final AtomicInteger THREADS = new AtomicInteger();
  private static final NodeCapabilities CAPABILITIES =
      NodeCapabilities.millisecondPrecision()
          .withFencing()
          .withStatus()
          .withReleaseNotifications()
          .withInspection()
          .withClock();
  private static final String FENCE_NAMESPACE = "{fence}:";

  private final String name;
  private final String description;
  private final String keyPrefix;
  final int socketTimeoutMillis;
  final RedisErrors errors;
  final ConnectionPool pool;

  /** Lends connections to calls that found none idle, and sends them; runs status() look-ups. */
  final ThreadPoolExecutor background;

  /**
   * Closes broken connections, one after another, apart from {@link #background}: the pool opens a
   * replacement as it forgets one, which against a stalled server takes up to the socket timeout,
   * and must hold up neither a caller nor the calls waiting for a connection.
   */
  private final java.util.concurrent.ExecutorService discards;

  private final RedisIncarnation incarnation;
  private final ReleaseNotifications notifications;
  private final AtomicBoolean closed = new AtomicBoolean();

  private RedisLockNode(Builder b) {
    String host = b.host.contains(":") ? "[" + b.host + "]" : b.host;
    this.name = (b.tls ? "rediss" : "redis") + "://" + host + ":" + b.port + "/" + b.database;
    this.description =
        String.format(
            "%s (user=%s, password=%s, connectTimeout=%dms, socketTimeout=%dms, poolSize=%d,"
                + " keyPrefix='%s'%s)",
            name,
            b.user == null ? "default" : b.user,
            b.password == null ? "none" : "***",
            b.connectTimeout.toMillis(),
            b.socketTimeout.toMillis(),
            b.poolSize,
            b.keyPrefix,
            b.tls ? ", verifyHostname=" + b.verifyHostname : "");
    this.keyPrefix = b.keyPrefix;
    this.socketTimeoutMillis = (int) b.socketTimeout.toMillis();
    this.errors = new RedisErrors(b, name);
    DefaultJedisClientConfig.Builder config =
        DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis((int) b.connectTimeout.toMillis())
            .socketTimeoutMillis(socketTimeoutMillis)
            .user(b.user)
            .password(b.password)
            .database(b.database)
            // neither CLIENT SETINFO nor HELLO: no extra round trips on connect, any Redis version
            .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
            .autoNegotiateProtocol(false)
            .ssl(b.tls);
    if (b.tls) {
      SSLParameters parameters = new SSLParameters();
      if (b.verifyHostname) {
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
      }
      config
          .sslSocketFactory(
              b.sslSocketFactory != null
                  ? b.sslSocketFactory
                  : (SSLSocketFactory) SSLSocketFactory.getDefault())
          .sslParameters(parameters);
    }
    DefaultJedisClientConfig clientConfig = config.build();
    HostAndPort address = new HostAndPort(b.host, b.port);
    this.incarnation = new RedisIncarnation(this);
    ConnectionFactory connections =
        new ConnectionFactory(address, clientConfig) {
          @Override
          public PooledObject<Connection> makeObject() throws Exception {
            PooledObject<Connection> made = super.makeObject();
            try {
              incarnation.connected(made.getObject());
            } catch (RuntimeException e) {
              made.getObject().disconnect(); // the pool never sees it
              throw e;
            }
            return made;
          }
        };
    ConnectionPoolConfig poolConfig = new ConnectionPoolConfig();
    poolConfig.setMaxTotal(b.poolSize);
    poolConfig.setMaxIdle(b.poolSize);
    poolConfig.setMaxWait(b.connectTimeout);
    poolConfig.setJmxEnabled(false); // Jedis's defaults close connections idle for a minute
    this.pool = new ConnectionPool(connections, poolConfig);
    this.background =
        Replies.workers(
            "redlock-redis-" + THREADS.incrementAndGet() + " " + name + " #",
            b.poolSize,
            16 * b.poolSize,
            Duration.ofSeconds(10));
    String discarder = "redlock-redis-discard " + name;
    this.discards =
        java.util.concurrent.Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, discarder);
              t.setDaemon(true);
              return t;
            });
    this.notifications =
        new ReleaseNotifications(name, address, clientConfig, releaseChannel(), errors);
  }

  /** A node for a {@code redis://} or {@code rediss://} URI; a bad one is an error naming it. */
  public static RedisLockNode fromUri(String uri) {
    return builder().uri(uri).build();
  }

  /** A builder; start from {@link Builder#uri} or set each part. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public NodeCapabilities capabilities() {
    return CAPABILITIES;
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    check(key, token);
    return call(
        RedisCall.SET_NX_PX,
        new CommandArguments(Protocol.Command.SET)
            .addObjects(storedKey(key), token, Protocol.Keyword.NX, Protocol.Keyword.PX, px(ttl)));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    check(key, token);
    return call(
        RedisCall.RELEASE, script(Scripts.RELEASE_SHA, 1, storedKey(key), token, releaseChannel()));
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    check(key, token);
    return call(RedisCall.EXTEND, script(Scripts.EXTEND_SHA, 1, storedKey(key), token, px(ttl)));
  }

  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    check(key, token);
    String px = px(ttl);
    return call(
        RedisCall.ACQUIRE_FENCED,
        script(Scripts.ACQUIRE_FENCED_SHA, 2, storedKey(key), fenceKey(key), token, px));
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    check(key, token);
    LockNodeArguments.requireFence(atLeast);
    String value = Long.toString(atLeast);
    return call(
        RedisCall.RAISE_FENCE,
        script(Scripts.RAISE_FENCE_SHA, 2, storedKey(key), fenceKey(key), token, value));
  }

  /** From what new connections recorded (see {@link RedisIncarnation}), else asked. */
  @Override
  public Reply<NodeStatus> status() {
    checkOpen();
    incarnation.watch();
    RedisIncarnation.Observation seen = incarnation.latest();
    return seen != null && seen.problem() == null ? Reply.of(seen.toStatus()) : incarnation.ask();
  }

  /** The server's clock, from {@code TIME}. */
  @Override
  public Reply<Instant> serverTime() {
    checkOpen();
    return call(RedisCall.TIME, new CommandArguments(Protocol.Command.TIME));
  }

  /** Who holds {@code key}: {@code GET} and {@code PTTL} in one script (a plain EVAL). */
  @Override
  public Reply<Optional<KeyHolder>> inspect(String key) {
    check(key, null);
    return call(
        RedisCall.INSPECT,
        new CommandArguments(Protocol.Command.EVAL)
            .addObjects(
                "return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])}",
                1,
                storedKey(key)));
  }

  /** The key holding {@code key}'s fencing counter: the key prefix, "{fence}:", then key. */
  public String fenceKey(String key) {
    return keyPrefix + FENCE_NAMESPACE + key;
  }

  /** The key as stored on the server: the key prefix, if any, followed by {@code key}. */
  public String storedKey(String key) {
    return keyPrefix.isEmpty() ? key : keyPrefix + key;
  }

  /** The channel where releases publish the stored key: the key prefix + "redlock:released". */
  public String releaseChannel() {
    return keyPrefix + "redlock:released";
  }

  @Override
  public ReleaseSubscription onRelease(String key, Runnable listener) {
    check(key, null);
    return notifications.register(storedKey(key), listener);
  }

  /** True while the release subscriber (started by the first onRelease) is subscribed. */
  public boolean releaseSubscriberReady() {
    return notifications.subscribed();
  }

  /** Connections lent out right now; zero when no call is in flight. For tests and monitoring. */
  public int activeConnections() {
    return pool.getNumActive();
  }

  /** Connections idle in the pool right now. For tests and monitoring. */
  public int idleConnections() {
    return pool.getNumIdle();
  }

  /** Closes every connection. Idempotent; later calls throw {@link IllegalStateException}. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      background.shutdown();
      discards.shutdown();
      notifications.close();
      pool.close();
    }
  }

  /** The node's name and settings, without the password. */
  @Override
  public String toString() {
    return description;
  }

  private <T> Reply<T> call(Kind<T> kind, CommandArguments command) {
    return new RedisCall<>(this, kind, command);
  }

  /** An idle pooled connection, or null if none is idle (never waits for one). */
  Connection takeIdle() {
    if (pool.getNumIdle() == 0) {
      return null;
    }
    try {
      Connection c = pool.borrowObject(Duration.ZERO);
      c.setHandlingPool(pool); // so that close() gives it back
      return c;
    } catch (Exception e) {
      return null; // taken meanwhile (or a connection opened in the race failed): wait for one
    }
  }

  /** Closes a connection whose state is unknown or broken (the pool then forgets it). */
  static void discard(Connection c) {
    c.setBroken();
    try {
      c.close();
    } catch (RuntimeException e) {
      // closed; the pool could not open a replacement for a waiting call, which fails on its own
    }
  }

  /**
   * {@link #discard} on the node's discarding thread: giving a broken connection back makes the
   * pool open a replacement right away (connect, then {@link RedisIncarnation}'s INFO), which on a
   * stalled server blocks for the socket timeout. Inline only once the node is closed.
   */
  void discardInBackground(Connection c) {
    try {
      discards.execute(() -> discard(c));
    } catch (RejectedExecutionException e) {
      discard(c);
    }
  }

  /** After a broken connection: the idle ones are likely stale too (the server restarted). */
  void connectionFailed() {
    try {
      pool.clear();
    } catch (RuntimeException e) {
      // as in discard
    }
  }

  /** The checks of a key and of a token (unless null) that every call makes. */
  private void check(String key, String token) {
    checkOpen();
    LockNodeArguments.requireKey(key);
    if (key.startsWith(FENCE_NAMESPACE)) {
      // it would be another key's fencing counter, which never expires
      throw new IllegalArgumentException(
          "lock key '"
              + key
              + "' starts with "
              + FENCE_NAMESPACE
              + ", the namespace of this backend's fencing counters; choose another lock name");
    }
    if (token != null) {
      LockNodeArguments.requireToken(token);
    }
  }

  /** The PX argument: whole milliseconds, rounded up (a key must never expire too early). */
  private static String px(Duration ttl) {
    LockNodeArguments.requireTtl(ttl, CAPABILITIES);
    try {
      long millis = ttl.toMillis();
      return Long.toString(ttl.getNano() % 1_000_000 == 0 ? millis : Math.addExact(millis, 1));
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("ttl " + ttl + " is too large for Redis PX", e);
    }
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed; create a new node to use it again");
    }
  }

  private static CommandArguments script(String sha, int keys, String... keysThenArgs) {
    return new CommandArguments(Protocol.Command.EVALSHA)
        .addObjects(sha, keys)
        .addObjects((Object[]) keysThenArgs);
  }

  /** Builds a {@link RedisLockNode}. Not thread-safe. */
  public static final class Builder {
    String host = "localhost";
    int port = 6379;
    boolean tls;
    String user;
    String password;
    int database;
    Duration connectTimeout = Duration.ofSeconds(1);
    Duration socketTimeout = Duration.ofSeconds(2);
    int poolSize = 8;
    String keyPrefix = "";
    boolean verifyHostname = true;
    SSLSocketFactory sslSocketFactory;

    private Builder() {}

    /** Takes everything the URI gives; later calls override it. */
    public Builder uri(String uri) {
      RedisUri.apply(uri, this);
      return this;
    }

    /** Host name or IP address (default {@code localhost}). */
    public Builder host(String host) {
      if (host == null || host.isBlank()) {
        throw new IllegalArgumentException("host must be a non-empty host name or IP address");
      }
      this.host = host.strip();
      return this;
    }

    /** Port, 1-65535 (default 6379). */
    public Builder port(int port) {
      if (port < 1 || port > 65_535) {
        throw new IllegalArgumentException("port must be in 1..65535, got " + port);
      }
      this.port = port;
      return this;
    }

    /** Connect with TLS (what {@code rediss://} means). */
    public Builder tls(boolean tls) {
      this.tls = tls;
      return this;
    }

    /** The ACL user (Redis 6+); the default user if not set. */
    public Builder user(String user) {
      this.user = user == null || user.isEmpty() ? null : user;
      return this;
    }

    /** The password. */
    public Builder password(String password) {
      this.password = password == null || password.isEmpty() ? null : password;
      return this;
    }

    /** The database index (default 0). */
    public Builder database(int database) {
      if (database < 0) {
        throw new IllegalArgumentException(
            "database index must be 0 or more, got " + database + " (Redis numbers them from 0)");
      }
      this.database = database;
      return this;
    }

    /** Bound on connecting and on waiting for a pooled connection (default 1 s). */
    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = requireTimeout("connectTimeout", timeout);
      return this;
    }

    /** Bound on reads nobody waits for: connection set-up (default 2 s). */
    public Builder socketTimeout(Duration timeout) {
      this.socketTimeout = requireTimeout("socketTimeout", timeout);
      return this;
    }

    private static Duration requireTimeout(String name, Duration timeout) {
      Objects.requireNonNull(timeout, name + " must not be null");
      if (timeout.toMillis() < 1 || timeout.compareTo(Duration.ofMillis(Integer.MAX_VALUE)) > 0) {
        throw new IllegalArgumentException(
            name + " must be between 1 ms and " + Integer.MAX_VALUE + " ms, got " + timeout);
      }
      return timeout;
    }

    /** Most connections open at once, 1-1024 (default 8). */
    public Builder poolSize(int poolSize) {
      if (poolSize < 1 || poolSize > 1024) {
        throw new IllegalArgumentException("poolSize must be in 1..1024, got " + poolSize);
      }
      this.poolSize = poolSize;
      return this;
    }

    /** Prepended to every lock key (default none). */
    public Builder keyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix == null ? "" : keyPrefix;
      return this;
    }

    /** With TLS, check that the certificate names the host (default true). */
    public Builder verifyHostname(boolean verify) {
      this.verifyHostname = verify;
      return this;
    }

    /** With TLS, the socket factory to use, e.g. with a custom trust store (default: the JVM's). */
    public Builder sslSocketFactory(SSLSocketFactory factory) {
      this.sslSocketFactory = factory;
      return this;
    }

    /** Builds the node without connecting: a node down now fails each call until it is up. */
    public RedisLockNode build() {
      if (sslSocketFactory != null && !tls) {
        throw new IllegalArgumentException(
            "an SSL socket factory was given but TLS is off; use a rediss:// URI or tls(true)");
      }
      return new RedisLockNode(this);
    }
  }
}
