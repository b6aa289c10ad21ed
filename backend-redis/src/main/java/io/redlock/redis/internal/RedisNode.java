package io.redlock.redis.internal;

import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeArguments;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.Reply;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionFactory;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.DefaultJedisSocketFactory;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Protocol;

/**
 * One Redis server as a lock node, over a pool of Jedis connections.
 *
 * <p>Each call takes a connection, writes the command and returns at once; the returned reply reads
 * the answer on the thread that awaits it and then gives the connection back. When no idle
 * connection is there, taking (or opening) one happens on the node's small background executor so
 * that the caller never waits for a connect. The same executor reads late replies of abandoned
 * calls.
 */
public final class RedisNode implements LockNode {
  private static final Logger log = LoggerFactory.getLogger(RedisNode.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  private final RedisNodeSettings settings;
  private final String name;
  private final RedisErrors errors;
  private final ConnectionPool pool;
  private final ThreadPoolExecutor background;
  private final AtomicBoolean closed = new AtomicBoolean();

  /** Creates the node; connects lazily (a down node can be created and fails per call). */
  public RedisNode(RedisNodeSettings settings) {
    this.settings = settings;
    this.name = settings.name();
    this.errors = new RedisErrors(settings);

    DefaultJedisClientConfig.Builder config =
        DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(millis(settings.connectTimeout()))
            .socketTimeoutMillis(millis(settings.socketTimeout()))
            .user(settings.user())
            .password(settings.password())
            .database(settings.database())
            // no CLIENT SETINFO round trip on connect: a connect must not wait for the server
            .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
            // RESP2 without HELLO: no extra round trip on connect, and works on any Redis version
            .autoNegotiateProtocol(false)
            .ssl(settings.tls());
    if (settings.tls()) {
      SSLSocketFactory factory =
          settings.sslSocketFactory() != null
              ? settings.sslSocketFactory()
              : (SSLSocketFactory) SSLSocketFactory.getDefault();
      SSLParameters parameters = new SSLParameters();
      if (settings.verifyHostname()) {
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
      }
      config.sslSocketFactory(factory).sslParameters(parameters);
    }
    DefaultJedisClientConfig clientConfig = config.build();
    HostAndPort address = new HostAndPort(settings.host(), settings.port());
    MuxConnection.Builder connections = new MuxConnection.Builder();
    connections
        .socketFactory(new DefaultJedisSocketFactory(address, clientConfig))
        .clientConfig(clientConfig);
    ConnectionFactory factory =
        ConnectionFactory.builder()
            .connectionBuilder(connections)
            .clientConfig(clientConfig)
            .hostAndPort(address)
            .build();

    ConnectionPoolConfig poolConfig = new ConnectionPoolConfig();
    poolConfig.setMaxTotal(settings.poolSize());
    poolConfig.setMaxIdle(settings.poolSize());
    poolConfig.setMinIdle(0);
    poolConfig.setBlockWhenExhausted(true);
    poolConfig.setMaxWait(settings.connectTimeout());
    poolConfig.setJmxEnabled(false);
    // idle connections are pinged now and then so that a dead one is found before a lock needs it
    poolConfig.setTestWhileIdle(true);
    this.pool = new ConnectionPool(factory, poolConfig);

    this.background =
        new ThreadPoolExecutor(
            settings.poolSize() + 1,
            settings.poolSize() + 1,
            10,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(16 * settings.poolSize()),
            daemonThreads(name));
    background.allowCoreThreadTimeOut(true);
    warmUp();
  }

  private static ThreadFactory daemonThreads(String name) {
    return runnable -> {
      Thread t = new Thread(runnable, "redlock-redis-" + THREADS.incrementAndGet() + " " + name);
      t.setDaemon(true);
      return t;
    };
  }

  /** Opens one connection in the background so that the first lock call finds it ready. */
  private void warmUp() {
    try {
      background.execute(
          () -> {
            try {
              pool.addObjects(1);
            } catch (RuntimeException e) {
              log.debug(
                  "{}: could not open a first connection: {}", name, errors.scrub(e.toString()));
            }
          });
    } catch (RejectedExecutionException e) {
      // not important: the first call opens a connection itself
    }
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public NodeCapabilities capabilities() {
    return NodeCapabilities.millisecondPrecision();
  }

  /** The settings this node runs with. */
  public RedisNodeSettings settings() {
    return settings;
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    checkOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    long px = ttlMillis(ttl);
    CommandArguments set =
        new CommandArguments(Protocol.Command.SET)
            .add(stored(key))
            .add(token)
            .add("NX")
            .add("PX")
            .add(px);
    return start(
        new Operation<>(
            "SET NX PX",
            set,
            null,
            reply -> {
              if (reply == null) {
                return AcquireResult.HELD;
              }
              if (reply instanceof byte[] bytes
                  && "OK".equals(new String(bytes, StandardCharsets.UTF_8))) {
                return AcquireResult.ACQUIRED;
              }
              throw unexpected("SET NX PX", reply);
            }));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    checkOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    String k = stored(key);
    return start(
        new Operation<>(
            "compare-and-delete (EVALSHA)",
            script(Protocol.Command.EVALSHA, Scripts.RELEASE_SHA, k, token),
            script(Protocol.Command.EVAL, Scripts.RELEASE, k, token),
            reply -> isOne(reply, "compare-and-delete")));
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    checkOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    String px = Long.toString(ttlMillis(ttl));
    String k = stored(key);
    return start(
        new Operation<>(
            "compare-and-extend (EVALSHA)",
            script(Protocol.Command.EVALSHA, Scripts.EXTEND_SHA, k, token, px),
            script(Protocol.Command.EVAL, Scripts.EXTEND, k, token, px),
            reply -> isOne(reply, "compare-and-extend")));
  }

  private static CommandArguments script(
      Protocol.Command command, String scriptOrSha, String key, String... args) {
    CommandArguments out = new CommandArguments(command).add(scriptOrSha).add(1).add(key);
    for (String arg : args) {
      out.add(arg);
    }
    return out;
  }

  private Boolean isOne(Object reply, String operation) {
    if (reply instanceof Long n) {
      return n == 1L;
    }
    throw unexpected(operation, reply);
  }

  private RedlockTransientException unexpected(String operation, Object reply) {
    String shown =
        reply instanceof byte[] bytes
            ? new String(bytes, StandardCharsets.UTF_8)
            : String.valueOf(reply);
    return new RedlockTransientException(
        name,
        "unexpected reply to "
            + operation
            + ": '"
            + errors.scrub(shown)
            + "'; is this a Redis server (or a proxy that changes replies)?",
        null);
  }

  private String stored(String key) {
    return settings.keyPrefix().isEmpty() ? key : settings.keyPrefix() + key;
  }

  /**
   * The TTL in whole milliseconds, rounded up: a key must never expire before the client thinks.
   */
  private long ttlMillis(Duration ttl) {
    LockNodeArguments.requireTtl(ttl, capabilities());
    try {
      long millis = ttl.toMillis();
      return ttl.minusMillis(millis).isZero() ? millis : Math.addExact(millis, 1);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("ttl " + ttl + " is too large for Redis PX", e);
    }
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed; create a new node to use it again");
    }
  }

  /** A command, the command to fall back to on NOSCRIPT, and how to read the reply. */
  record Operation<T>(
      String description,
      CommandArguments command,
      CommandArguments fallback,
      Function<Object, T> parser) {}

  private <T> Reply<T> start(Operation<T> operation) {
    MuxConnection idle = takeIdle();
    if (idle != null) {
      try {
        idle.send(operation.command());
        return new PendingReply<>(this, operation, CompletableFuture.completedFuture(idle));
      } catch (RuntimeException e) {
        // A stale connection (the server restarted): the command cannot have been run by a live
        // server, so it is safe to send it again on a fresh connection below.
        discard(idle);
        pool.clear();
      }
    }
    CompletableFuture<MuxConnection> sent = new CompletableFuture<>();
    try {
      background.execute(
          () -> {
            MuxConnection connection = null;
            try {
              connection = borrow();
              connection.send(operation.command());
              sent.complete(connection);
            } catch (Throwable e) {
              if (connection != null) {
                discard(connection);
              }
              sent.completeExceptionally(e);
            }
          });
    } catch (RejectedExecutionException e) {
      if (closed.get()) {
        throw new IllegalStateException(name + " is closed; create a new node to use it again");
      }
      return Reply.failed(
          new RedlockTransientException(
              name,
              "too many calls are waiting for a connection to this node; raise poolSize or"
                  + " check that the node is not stalled",
              e));
    }
    return new PendingReply<>(this, operation, sent);
  }

  /** An idle pooled connection, or null if none is idle (never waits for one). */
  private MuxConnection takeIdle() {
    if (pool.getNumIdle() == 0) {
      return null;
    }
    try {
      return (MuxConnection) pool.borrowObject(Duration.ZERO);
    } catch (Exception e) {
      return null; // raced with another caller, or a fresh connection failed: take the slow path
    }
  }

  private MuxConnection borrow() throws Exception {
    return (MuxConnection) pool.borrowObject(settings.connectTimeout());
  }

  /** Gives a healthy connection back to the pool. */
  void giveBack(Connection connection) {
    try {
      connection.setSoTimeout(millis(settings.socketTimeout()));
      pool.returnObject(connection);
    } catch (RuntimeException e) {
      discard(connection);
    }
  }

  /** Closes a connection whose state is unknown or broken. */
  void discard(Connection connection) {
    try {
      pool.invalidateObject(connection);
    } catch (Exception e) {
      try {
        connection.disconnect();
      } catch (RuntimeException ignored) {
        // the socket is gone either way
      }
    }
  }

  /** After a connection failure, drops the idle connections: they are likely stale too. */
  void connectionFailed() {
    try {
      pool.clear();
    } catch (RuntimeException e) {
      log.debug("{}: could not clear idle connections: {}", name, e.toString());
    }
  }

  /** Runs a late-reply reader; false if the node is closed or overloaded. */
  boolean runInBackground(Runnable task) {
    try {
      background.execute(task);
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  RedisErrors errors() {
    return errors;
  }

  int socketTimeoutMillis() {
    return millis(settings.socketTimeout());
  }

  private static int millis(Duration d) {
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1, d.toMillis()));
  }

  /** Connections idle in the pool now (for tests and diagnostics). */
  public int idleConnections() {
    return pool.getNumIdle();
  }

  /** Connections lent out now (for tests and diagnostics). */
  public int activeConnections() {
    return pool.getNumActive();
  }

  /**
   * Closes the pool. Late replies being read finish within the socket timeout and their connections
   * are then closed. Idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    background.shutdown();
    try {
      pool.close();
    } catch (RuntimeException e) {
      log.debug("{}: error while closing connections: {}", name, e.toString());
    }
  }

  @Override
  public String toString() {
    return settings.toString();
  }
}
