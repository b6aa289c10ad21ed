package io.redlock.redis.internal;

import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.spi.support.Replies;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
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
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.DefaultJedisSocketFactory;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.args.Rawable;
import redis.clients.jedis.util.SafeEncoder;

/**
 * One Redis server as a lock node, over a pool of Jedis connections.
 *
 * <p>Each call takes a connection, writes the command and returns at once; the returned reply reads
 * the answer on the thread that awaits it and then gives the connection back. When no idle
 * connection is there, the call waits in the pool's queue, holding no thread, and is sent by
 * whichever thread gives a connection back or opens one (openings run on the node's small
 * background executor, so that the caller never waits for a connect); a call abandoned meanwhile is
 * never sent, except a release. Late replies of abandoned calls are read on threads of their own.
 */
public final class RedisNode implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(RedisNode.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  /**
   * An idle connection older than this is closed rather than reused: something on the way may have
   * dropped it (commons-pool2's evictor default, which this node used before).
   */
  private static final Duration MAX_IDLE = Duration.ofSeconds(60);

  /**
   * Calls that may wait for a connection, per connection of the pool: beyond them, calls fail at
   * once (a stalled node must not gather calls without bound).
   */
  private static final int MAX_WAITING_PER_CONNECTION = 16;

  private static final NodeCapabilities CAPABILITIES =
      NodeCapabilities.millisecondPrecision()
          .withFencing()
          .withStatus()
          .withReleaseNotifications()
          .withInspection()
          .withClock();
  private static final Rawable ONE_KEY = bytes("1");
  private static final Rawable RELEASE_SHA = bytes(Scripts.RELEASE_SHA);
  private static final Rawable RELEASE_QUIET_SHA = bytes(Scripts.RELEASE_QUIET_SHA);

  /** How long an answer to "does anybody subscribe to the release channel?" is trusted. */
  private static final long SUBSCRIBERS_FRESH_NANOS = 100_000_000L;

  private static final Rawable EXTEND_SHA = bytes(Scripts.EXTEND_SHA);

  private final RedisNodeSettings settings;
  private final String name;
  private final RedisErrors errors;
  private final MuxPool pool;
  private final ThreadPoolExecutor background;

  /** Reads the late answers of abandoned calls: one thread per connection at most, no queue. */
  private final ThreadPoolExecutor lateReaders;

  private final AtomicBoolean closed = new AtomicBoolean();

  /** The server's incarnation as seen on new connections, for {@link #status()}. */
  private final RedisIncarnation incarnation;

  /** The channel that releases are published on, as a command argument. */
  private final Rawable releaseChannel;

  /** The subscriber for {@link #onRelease}, started by the first registration. */
  private final ReleaseNotifications notifications;

  /** The PX argument of the TTL used last: nearly every caller uses one TTL for all its locks. */
  private volatile PxArgument lastPx;

  // The kinds of command, made once per node (their parsers name the node in errors).
  private final Operation<AcquireResult> setNxPx;
  private final Operation<Boolean> compareAndDelete;
  private final Operation<Boolean> compareAndDeleteQuiet;

  /**
   * Whether anybody subscribes to the release channel, as last asked ({@code PUBSUB NUMSUB}): a
   * release publishes only then. True until the first answer.
   */
  private volatile boolean subscribers = true;

  /** When the question behind {@link #subscribers} was asked; written under the lock below. */
  private volatile long subscribersAnsweredFor = System.nanoTime() - Long.MAX_VALUE / 2;

  private final Object subscribersAnswerLock = new Object();

  /** When {@link #subscribers} was last asked for (System.nanoTime), or is being asked. */
  private final java.util.concurrent.atomic.AtomicLong subscribersAskedAt =
      new java.util.concurrent.atomic.AtomicLong(System.nanoTime() - SUBSCRIBERS_FRESH_NANOS);

  private final Operation<Boolean> compareAndExtend;
  private final Operation<AcquireResult> fencedAcquire;
  private final Operation<Boolean> fenceWriteBack;
  private final Operation<Instant> time;
  private final Operation<Optional<KeyHolder>> inspection;

  /** Creates the node; connects lazily (a down node can be created and fails per call). */
  public RedisNode(RedisNodeSettings settings) {
    this.settings = settings;
    this.name = settings.name();
    this.errors = new RedisErrors(settings);
    this.setNxPx =
        new Operation<>(
            "SET NX PX",
            null,
            reply -> {
              if (reply == null) {
                return AcquireResult.HELD;
              }
              if (reply instanceof byte[] bytes
                  && bytes.length == 2
                  && bytes[0] == 'O'
                  && bytes[1] == 'K') {
                return AcquireResult.ACQUIRED;
              }
              throw unexpected("SET NX PX", reply);
            });
    // a release is sent even when the engine stops waiting for it: see Reply.abandon
    this.compareAndDelete =
        new Operation<>(
            "compare-and-delete (EVALSHA)",
            bytes(Scripts.RELEASE),
            reply -> isOne(reply, "compare-and-delete"),
            false);
    this.compareAndDeleteQuiet =
        new Operation<>(
            "compare-and-delete (EVALSHA)",
            bytes(Scripts.RELEASE_QUIET),
            reply -> isOne(reply, "compare-and-delete"),
            false);
    this.compareAndExtend =
        new Operation<>(
            "compare-and-extend (EVALSHA)",
            bytes(Scripts.EXTEND),
            reply -> isOne(reply, "compare-and-extend"));
    this.fencedAcquire =
        new Operation<>(
            "fenced acquire (EVALSHA)",
            bytes(Scripts.ACQUIRE_FENCED),
            reply -> {
              if (reply == null) {
                return AcquireResult.HELD;
              }
              if (reply instanceof byte[] bytes) {
                try {
                  long value = Long.parseLong(new String(bytes, StandardCharsets.US_ASCII));
                  if (value > 0) {
                    return AcquireResult.acquired(value);
                  }
                } catch (NumberFormatException e) {
                  // reported below
                }
              }
              throw unexpected("fenced acquire", reply);
            });
    this.fenceWriteBack =
        new Operation<>(
            "fence write-back (EVALSHA)",
            bytes(Scripts.RAISE_FENCE),
            reply -> isOne(reply, "fence write-back"));
    this.time = new Operation<>("TIME", null, this::parseTime);
    this.inspection = new Operation<>("inspect (EVAL of GET and PTTL)", null, this::parseHolder);

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
    this.incarnation = new RedisIncarnation(this);
    MuxConnection.Builder connections = new MuxConnection.Builder();
    connections.onConnect(incarnation::connected);
    connections
        .socketFactory(new DefaultJedisSocketFactory(address, clientConfig))
        .clientConfig(clientConfig);
    ConnectionFactory factory =
        ConnectionFactory.builder()
            .connectionBuilder(connections)
            .clientConfig(clientConfig)
            .hostAndPort(address)
            .build();

    this.background =
        new ThreadPoolExecutor(
            settings.poolSize() + 1,
            settings.poolSize() + 1,
            10,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(16 * settings.poolSize()),
            daemonThreads(name));
    background.allowCoreThreadTimeOut(true);
    this.pool =
        new MuxPool(
            factory,
            settings.poolSize(),
            MAX_IDLE,
            MAX_WAITING_PER_CONNECTION * settings.poolSize(),
            background);
    this.releaseChannel = bytes(releaseChannel());
    this.notifications =
        new ReleaseNotifications(name, address, clientConfig, releaseChannel(), errors);

    this.lateReaders =
        new ThreadPoolExecutor(
            0,
            settings.poolSize(),
            10,
            TimeUnit.SECONDS,
            new SynchronousQueue<>(),
            daemonThreads("late replies " + name));
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
              pool.addIdle();
            } catch (Exception e) {
              log.debug(
                  "{}: could not open a first connection: {}", name, errors.scrub(e.toString()));
            }
          });
    } catch (RejectedExecutionException e) {
      // not important: the first call opens a connection itself
    }
  }

  public String name() {
    return name;
  }

  public NodeCapabilities capabilities() {
    return CAPABILITIES;
  }

  /** The settings this node runs with. */
  public RedisNodeSettings settings() {
    return settings;
  }

  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    checkOpen();
    requireLockKey(key);
    LockNodeArguments.requireToken(token);
    String prefix = settings.keyPrefix();
    LastCommands last = LastCommands.get();
    CommandArguments set = last.set;
    if (set == null || !last.setIsFor(prefix, key, token, ttl)) {
      set =
          new CommandArguments(Protocol.Command.SET)
              .add(ArgumentCache.encode(prefix, key))
              .add(ArgumentCache.encode("", token))
              .add(Protocol.Keyword.NX)
              .add(Protocol.Keyword.PX)
              .add(pxArgument(ttl));
      last.setFor(prefix, key, token, ttl, set);
    }
    return start(setNxPx, set);
  }

  /**
   * This thread's last SET and release commands. The engine passes the same key, token and TTL to
   * every node of a fan-out from one thread, and nodes with the same key prefix send the very same
   * bytes, so one command object serves them all: building it per node was most of a cycle's
   * remaining garbage. A command is only ever read (sent, or turned into EVAL after NOSCRIPT), so
   * sharing it is safe; only this thread replaces the cached one.
   */
  private static final class LastCommands {
    private static final ThreadLocal<LastCommands> CACHE =
        ThreadLocal.withInitial(LastCommands::new);

    private String setPrefix;
    private String setKey;
    private String setToken;
    private Duration setTtl;
    private CommandArguments set;
    private String releasePrefix;
    private String releaseKey;
    private String releaseToken;
    private boolean releasePublish;
    private CommandArguments release;

    static LastCommands get() {
      return CACHE.get();
    }

    boolean setIsFor(String prefix, String key, String token, Duration ttl) {
      // setTtl first: a null ttl must miss and reach the argument check, not throw here
      return key.equals(setKey)
          && token.equals(setToken)
          && setTtl.equals(ttl)
          && prefix.equals(setPrefix);
    }

    void setFor(String prefix, String key, String token, Duration ttl, CommandArguments command) {
      setPrefix = prefix;
      setKey = key;
      setToken = token;
      setTtl = ttl;
      set = command;
    }

    boolean releaseIsFor(String prefix, String key, String token, boolean publish) {
      return key.equals(releaseKey)
          && token.equals(releaseToken)
          && prefix.equals(releasePrefix)
          && publish == releasePublish;
    }

    void releaseFor(
        String prefix, String key, String token, boolean publish, CommandArguments command) {
      releasePrefix = prefix;
      releaseKey = key;
      releaseToken = token;
      releasePublish = publish;
      release = command;
    }
  }

  public Reply<Boolean> release(String key, String token) {
    checkOpen();
    requireLockKey(key);
    LockNodeArguments.requireToken(token);
    String prefix = settings.keyPrefix(); // the release channel follows from it
    boolean publish = publishReleases();
    LastCommands last = LastCommands.get();
    CommandArguments release = last.release;
    if (release == null || !last.releaseIsFor(prefix, key, token, publish)) {
      release =
          script(
              Protocol.Command.EVALSHA,
              publish ? RELEASE_SHA : RELEASE_QUIET_SHA,
              prefix,
              key,
              token,
              releaseChannel);
      last.releaseFor(prefix, key, token, publish, release);
    }
    return start(publish ? compareAndDelete : compareAndDeleteQuiet, release);
  }

  /**
   * Whether a release should publish: only when somebody subscribes to the release channel (a
   * waiter of any client, since every waiting node subscribes), as last asked; the asking is
   * renewed in the background once the question behind the answer is older than {@link
   * #SUBSCRIBERS_FRESH_NANOS}, and a release made without a fresh answer publishes. A waiter that
   * subscribed within that time after a "nobody" may still miss a release and poll instead.
   */
  private boolean publishReleases() {
    long now = System.nanoTime();
    if (now - subscribersAnsweredFor <= SUBSCRIBERS_FRESH_NANOS) {
      return subscribers;
    }
    long asked = subscribersAskedAt.get();
    if (now - asked > SUBSCRIBERS_FRESH_NANOS && subscribersAskedAt.compareAndSet(asked, now)) {
      try {
        background.execute(() -> askSubscribers(now));
      } catch (RejectedExecutionException e) {
        // closing: keep the last answer
      }
    }
    return true; // the answer is stale: a waiter may have subscribed since, so publish
  }

  /**
   * Asks the server how many subscribe to the release channel, on an idle connection if any. An
   * answer to an older question than the last one applied is dropped: a slow answer must not undo a
   * newer one.
   */
  private void askSubscribers(long askedAt) {
    MuxConnection connection = takeIdle();
    if (connection == null) {
      subscribersAskedAt.set(System.nanoTime() - SUBSCRIBERS_FRESH_NANOS); // again at next call
      return;
    }
    try {
      connection.send(
          new CommandArguments(Protocol.Command.PUBSUB).add(bytes("NUMSUB")).add(releaseChannel));
      if (!connection.awaitReply(socketTimeoutMillis())) {
        discard(connection);
        return;
      }
      Object reply = connection.readReply(socketTimeoutMillis());
      giveBack(connection);
      if (reply instanceof java.util.List<?> parts
          && parts.size() == 2
          && parts.get(1) instanceof Long count) {
        synchronized (subscribersAnswerLock) {
          if (askedAt - subscribersAnsweredFor > 0) {
            subscribersAnsweredFor = askedAt;
            subscribers = count > 0;
          }
        }
      }
    } catch (RuntimeException e) {
      discard(connection); // e.g. NOPERM: keep publishing, as before the asking
      log.debug("{}: PUBSUB NUMSUB failed: {}", name, errors.scrub(e.toString()));
    }
  }

  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    checkOpen();
    requireLockKey(key);
    LockNodeArguments.requireToken(token);
    Rawable px = pxArgument(ttl);
    return start(
        compareAndExtend,
        script(Protocol.Command.EVALSHA, EXTEND_SHA, settings.keyPrefix(), key, token, px));
  }

  /**
   * The Pub/Sub channel on which every release made by this library (a compare-and-delete that
   * deleted the key) publishes the stored key: the key prefix followed by {@code
   * "redlock:released"}.
   */
  public String releaseChannel() {
    return settings.keyPrefix() + "redlock:released";
  }

  /**
   * Calls {@code listener} when {@code key} is released through any node of this library on the
   * same server and key prefix; see {@link ReleaseNotifications}.
   */
  public ReleaseSubscription onRelease(String key, Runnable listener) {
    checkOpen();
    requireLockKey(key);
    return notifications.register(stored(key), listener);
  }

  /** True while the release subscriber is subscribed (for tests). */
  public boolean releaseSubscriberReady() {
    return notifications.subscribed();
  }

  /** A one-key script call on {@code prefix + key} with the token and one more argument. */
  private static CommandArguments script(
      Protocol.Command command,
      Rawable scriptOrSha,
      String prefix,
      String key,
      String token,
      Rawable last) {
    return new CommandArguments(command)
        .add(scriptOrSha)
        .add(ONE_KEY)
        .add(ArgumentCache.encode(prefix, key))
        .add(ArgumentCache.encode("", token))
        .add(last);
  }

  private static Rawable bytes(String s) {
    return new ArgumentCache.Bytes(SafeEncoder.encode(s));
  }

  private record PxArgument(Duration ttl, Rawable millis) {}

  private Rawable pxArgument(Duration ttl) {
    PxArgument last = lastPx;
    if (last == null || !last.ttl().equals(ttl)) {
      last = new PxArgument(ttl, bytes(Long.toString(ttlMillis(ttl))));
      lastPx = last; // a TTL equal to this one was checked when it was cached
    }
    return last.millis();
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

  // -------------------------------------------------------------------------------------------
  // Fencing counters and status (optional parts of the SPI)

  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    checkOpen();
    requireLockKey(key);
    LockNodeArguments.requireToken(token);
    String px = Long.toString(ttlMillis(ttl));
    String k = stored(key);
    String fence = fenceKey(key);
    return start(
        fencedAcquire,
        twoKeyScript(Protocol.Command.EVALSHA, Scripts.ACQUIRE_FENCED_SHA, k, fence, token, px));
  }

  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    checkOpen();
    requireLockKey(key);
    LockNodeArguments.requireToken(token);
    if (atLeast <= 0) {
      throw new IllegalArgumentException(
          "atLeast must be a positive fencing value, got " + atLeast);
    }
    String value = Long.toString(atLeast);
    String k = stored(key);
    String fence = fenceKey(key);
    return start(
        fenceWriteBack,
        twoKeyScript(Protocol.Command.EVALSHA, Scripts.RAISE_FENCE_SHA, k, fence, token, value));
  }

  /**
   * The status, from what new connections recorded (see {@link RedisIncarnation}); the first call
   * asks the server, and from then on every new connection reads the incarnation first.
   */
  public Reply<NodeStatus> status() {
    checkOpen();
    incarnation.watch();
    RedisIncarnation.Observation seen = incarnation.latest();
    if (seen != null && seen.problem() == null) {
      return Reply.of(seen.toStatus());
    }
    // Nothing seen yet, or the last look failed (NOPERM, BUSY...): ask again rather than repeat
    // the old failure forever, since a busy pool may not open a new connection for a long time.
    return Replies.supplyAsync(
        () -> {
          MuxConnection connection;
          try {
            connection = borrow();
          } catch (Exception e) {
            throw errors.translate(e, "INFO (for the node's status)");
          }
          try {
            incarnation.observe(connection);
            giveBack(connection);
          } catch (RuntimeException e) {
            discard(connection);
            connectionFailed();
            throw errors.translate(e, "INFO (for the node's status)");
          }
          RedisIncarnation.Observation latest = incarnation.latest();
          if (latest.problem() != null) {
            throw latest.problem();
          }
          return latest.toStatus();
        },
        background,
        name);
  }

  /**
   * The server's clock: {@code TIME} (Unix seconds and microseconds), sent afresh on every call
   * like any other command (never answered from the status cache).
   */
  public Reply<Instant> serverTime() {
    checkOpen();
    return start(time, new CommandArguments(Protocol.Command.TIME));
  }

  /**
   * Who holds {@code key}: {@code GET} and {@code PTTL} in one script, so that both describe the
   * same moment. A plain {@code EVAL}: this is an operator's call, not worth a cached digest.
   */
  public Reply<Optional<KeyHolder>> inspect(String key) {
    checkOpen();
    requireLockKey(key);
    return start(
        inspection,
        new CommandArguments(Protocol.Command.EVAL)
            .add(INSPECT)
            .add(ONE_KEY)
            .add(ArgumentCache.encode(settings.keyPrefix(), key)));
  }

  private static final Rawable INSPECT =
      bytes("return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])}");

  /**
   * The inspection's answer: the value and the PTTL in ms (-1: no expiry); nil and -2 when the key
   * is absent.
   */
  private Optional<KeyHolder> parseHolder(Object reply) {
    if (reply instanceof java.util.List<?> parts) {
      if (parts.isEmpty() || parts.get(0) == null) {
        return Optional.empty();
      }
      if (parts.size() == 2
          && parts.get(0) instanceof byte[] token
          && parts.get(1) instanceof Long millis
          && millis >= -1) {
        Duration remaining =
            millis == -1 ? ChronoUnit.FOREVER.getDuration() : Duration.ofMillis(millis);
        return Optional.of(new KeyHolder(new String(token, StandardCharsets.UTF_8), remaining));
      }
    }
    throw unexpected("inspect", reply);
  }

  /** {@code TIME}'s answer: an array of two bulk strings, seconds and microseconds. */
  private Instant parseTime(Object reply) {
    if (reply instanceof java.util.List<?> parts
        && parts.size() == 2
        && parts.get(0) instanceof byte[] seconds
        && parts.get(1) instanceof byte[] micros) {
      try {
        long s = Long.parseLong(new String(seconds, StandardCharsets.US_ASCII));
        long us = Long.parseLong(new String(micros, StandardCharsets.US_ASCII));
        if (us >= 0 && us < 1_000_000) {
          return Instant.ofEpochSecond(s, us * 1_000);
        }
      } catch (NumberFormatException | java.time.DateTimeException e) {
        // reported below
      }
    }
    throw unexpected("TIME", reply);
  }

  /** The namespace of fencing counters, inside the key prefix. */
  private static final String FENCE_NAMESPACE = "{fence}:";

  /**
   * The SPI's key checks, plus one of this backend's: a lock key in the counters' namespace would
   * be another key's fencing counter (which never expires), so it is refused.
   */
  private static void requireLockKey(String key) {
    LockNodeArguments.requireKey(key);
    if (key.startsWith(FENCE_NAMESPACE)) {
      throw new IllegalArgumentException(
          "lock key '"
              + key
              + "' starts with "
              + FENCE_NAMESPACE
              + ", the namespace of this backend's fencing counters; choose another lock name");
    }
  }

  /**
   * The key that holds the fencing counter of {@code key}: the key prefix, {@code "{fence}:"}, then
   * {@code key}. It has no expiry, so it survives release and expiry of the lock key.
   */
  public String fenceKey(String key) {
    return settings.keyPrefix() + FENCE_NAMESPACE + key;
  }

  private static CommandArguments twoKeyScript(
      Protocol.Command command,
      String scriptOrSha,
      String key,
      String fence,
      String token,
      String value) {
    return new CommandArguments(command)
        .add(scriptOrSha)
        .add("2")
        .add(key)
        .add(fence)
        .add(token)
        .add(value);
  }

  private String stored(String key) {
    return settings.keyPrefix().isEmpty() ? key : settings.keyPrefix() + key;
  }

  /**
   * The TTL in whole milliseconds, rounded up: a key must never expire before the client thinks.
   */
  private long ttlMillis(Duration ttl) {
    LockNodeArguments.requireTtl(ttl, CAPABILITIES);
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

  /**
   * One kind of command: its description for messages, the script to fall back to on NOSCRIPT (null
   * for plain commands), and how to read its reply. One instance per node and kind, made once: a
   * lock call allocates only its command and its reply.
   *
   * @param fallbackScript for an {@code EVALSHA}: the script's source, sent with {@code EVAL} and
   *     the same keys and arguments when the server has lost its script cache
   */
  record Operation<T>(
      String description, Rawable fallbackScript, Function<Object, T> parser, boolean droppable) {
    Operation(String description, Rawable fallbackScript, Function<Object, T> parser) {
      this(description, fallbackScript, parser, true);
    }
  }

  /**
   * The {@code EVAL} that replaces an {@code EVALSHA} command: the script instead of its digest,
   * then the same keys and arguments. Built only on NOSCRIPT (it carries the whole script).
   */
  static CommandArguments evalInsteadOf(CommandArguments evalsha, Rawable script) {
    CommandArguments eval = new CommandArguments(Protocol.Command.EVAL).add(script);
    int index = 0;
    for (Rawable argument : evalsha) {
      if (index++ >= 2) { // 0: EVALSHA, 1: the digest
        eval.add(argument);
      }
    }
    return eval;
  }

  private <T> Reply<T> start(Operation<T> operation, CommandArguments command) {
    MuxConnection idle = takeIdle();
    if (idle != null) {
      try {
        idle.send(command);
        return new PendingReply<>(this, operation, command, idle);
      } catch (RuntimeException e) {
        // A stale connection (the server restarted): the command cannot have been run by a live
        // server, so it is safe to send it again on a fresh connection below.
        discard(idle);
        pool.clear();
      }
    }
    // No idle connection: the call waits for one, holding no thread (see MuxPool.await).
    CompletableFuture<MuxConnection> sent = new CompletableFuture<>();
    PendingReply<T> reply = new PendingReply<>(this, operation, command, sent);
    pool.await(reply);
    return reply;
  }

  /** An idle pooled connection, or null if none is idle (never waits for one). */
  private MuxConnection takeIdle() {
    return pool.pollIdle();
  }

  private MuxConnection borrow() throws Exception {
    return pool.borrow(settings.connectTimeout());
  }

  /** Gives a healthy connection back to the pool. */
  void giveBack(Connection connection) {
    // The socket keeps the read timeout of the last reply: every read of a lent connection sets its
    // own (nothing reads an idle one), and setting it back here cost time on every call.
    pool.giveBack((MuxConnection) connection);
  }

  /** Closes a connection whose state is unknown or broken. */
  void discard(Connection connection) {
    pool.discard(connection);
  }

  /** After a connection failure, drops the idle connections: they are likely stale too. */
  void connectionFailed() {
    try {
      pool.clear();
    } catch (RuntimeException e) {
      log.debug("{}: could not clear idle connections: {}", name, e.toString());
    }
  }

  /**
   * Runs a late-reply reader on a thread of its own; false if the node is closed. Readers have
   * their own threads, at most one per connection, so that they never wait behind calls that wait
   * for the connections only the readers give back.
   */
  boolean readLate(Runnable reader) {
    try {
      lateReaders.execute(reader);
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
    return pool.idle();
  }

  /** Connections lent out now (for tests and diagnostics). */
  public int activeConnections() {
    return pool.active();
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
    lateReaders.shutdown();
    notifications.close();
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
