package io.redlock.redis;

import io.redlock.redis.internal.RedisNode;
import io.redlock.redis.internal.RedisSettingsBuilder;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import javax.net.ssl.SSLSocketFactory;

/**
 * One Redis server as a Redlock node, over a pool of Jedis connections.
 *
 * <pre>{@code
 * LockNode a = RedisLockNode.fromUri("redis://10.0.0.5:6379");
 * LockNode b = RedisLockNode.fromUri("rediss://app:s3cret@10.0.0.6:6380/2?keyPrefix=locks:&poolSize=16");
 * LockNode c = RedisLockNode.builder().host("10.0.0.7").password(secret).build();
 * }</pre>
 *
 * <h2>URI</h2>
 *
 * {@code redis://[user:password@]host[:port][/database][?option=value&...]}, or {@code rediss://}
 * for TLS. The port defaults to 6379 and the database to 0. Options (an unknown one is an error):
 *
 * <ul>
 *   <li>{@code user}, {@code password}: the ACL user and password, instead of the user-info part;
 *   <li>{@code database}: the database index, instead of the path;
 *   <li>{@code connectTimeout} (default 1 s): bound on connecting and on waiting for a pooled
 *       connection;
 *   <li>{@code socketTimeout} (default 2 s): bound on reads nobody waits for: connection set-up,
 *       validation, and late replies read after a caller gave up;
 *   <li>{@code poolSize} (default 8): most connections open to the node at once;
 *   <li>{@code keyPrefix} (default none): prepended to every lock key;
 *   <li>{@code verifyHostname} (default true): with TLS, check that the certificate names the host.
 * </ul>
 *
 * Durations are milliseconds ({@code 500}) or carry a unit ({@code 500ms}, {@code 2s}, {@code
 * PT2S}). Percent-encode special characters in the password. TLS trusts the JVM's trust store
 * ({@code javax.net.ssl.trustStore}) unless {@link Builder#sslSocketFactory} is given.
 *
 * <h2>Behaviour</h2>
 *
 * Acquire is {@code SET key token NX PX ttl}; release and extend are the algorithm's Lua
 * compare-and-delete and compare-and-extend, sent with EVALSHA and re-sent with EVAL if the server
 * lost its script cache. Every call writes its command at once and reads the answer when the reply
 * is awaited, so one thread can ask many nodes at the same time. TTLs are rounded up to whole
 * milliseconds. Failures are {@link io.redlock.RedlockTransientException}s (refused connection,
 * timeout, server loading or busy, pool exhausted) or {@link
 * io.redlock.RedlockNonTransientException}s (wrong password, missing permission, bad database
 * index, read-only replica, TLS problems), each naming the node and the fix; passwords never appear
 * in messages or in {@link #toString()}.
 *
 * <h2>Fencing counters and status</h2>
 *
 * The node keeps fencing counters ({@link #tryAcquireFenced}, {@link #raiseFence}) and reports its
 * status ({@link #status()}), for fencing tokens and restart quarantine. The lock key stays exactly
 * what the plain algorithm stores (a string key holding the token, with a {@code PX} expiry); the
 * counter of a key lives in a second key, {@link #fenceKey(String) keyPrefix + "{fence}:" + key},
 * an integer without expiry (one per fenced resource; a {@code maxmemory-policy} of {@code
 * noeviction} or {@code volatile-*} never evicts it). A fenced acquire is one Lua script: the
 * {@code SET NX PX}, then the counter becomes {@code max(counter + 1, server time in µs)}, so a
 * counter lost in a restart without persistence starts again above every value handed out before
 * (assuming the server's clock did not go back). The write-back raises the counter only if the lock
 * key still holds the caller's token. A plain acquire stays the single {@code SET NX PX}.
 *
 * <p>The status gives the server's {@code run_id} as its incarnation, {@code uptime_in_seconds},
 * and durable = AOF on with {@code appendfsync always} (if {@code CONFIG GET} is not permitted, not
 * durable), with version and persistence settings as details. The first {@code status()} call asks
 * the server; from then on every new connection reads {@code INFO} once before it is used, and
 * {@code status()} answers from memory: a restart breaks every connection, so a reply from a
 * restarted server is always preceded by a new connection that saw its new {@code run_id}. Connect
 * directly, not through a proxy that keeps client connections open across server restarts.
 *
 * <h2>Release notifications</h2>
 *
 * The node declares {@link NodeCapabilities#releaseNotifications()}: while somebody subscribes to
 * the channel {@link #releaseChannel() keyPrefix + "redlock:released"} (asked with {@code PUBSUB
 * NUMSUB} at most every 100 ms), the release script, after it deleted the key, publishes the stored
 * key on it (with {@code redis.pcall}, so a user whose ACL forbids the channel still releases). The
 * first {@link #onRelease} opens one more connection, subscribed to that channel on a daemon
 * thread, that calls the listeners of the published key; when it breaks, it is opened again after a
 * pause that doubles from 50 ms up to 2 s, and every listener is called once it is back (releases
 * may have been missed). Expiry is not notified: waiters still poll as a fallback.
 *
 * <p>Thread-safe. {@link #close()} closes the connections.
 */
public final class RedisLockNode implements LockNode {
  private final RedisNode node;

  private RedisLockNode(RedisNode node) {
    this.node = node;
  }

  /**
   * A node for a {@code redis://} or {@code rediss://} URI.
   *
   * @throws IllegalArgumentException for a malformed URI or an unknown or invalid option
   */
  public static RedisLockNode fromUri(String uri) {
    return builder().uri(uri).build();
  }

  /** A node for a parsed URI (as the {@link io.redlock.spi.LockNodeProvider} receives it). */
  public static RedisLockNode fromUri(NodeUri uri) {
    return fromUri(Objects.requireNonNull(uri, "uri").raw());
  }

  /** A builder; start from {@link Builder#uri} or set each part. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String name() {
    return node.name();
  }

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

  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    return node.tryAcquireFenced(key, token, ttl);
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    return node.raiseFence(key, token, atLeast);
  }

  @Override
  public Reply<NodeStatus> status() {
    return node.status();
  }

  /**
   * The server's clock, from {@code TIME} (microsecond resolution), asked afresh on every call on a
   * pooled connection; for diagnostics such as {@code redlock doctor}'s clock offset.
   */
  @Override
  public Reply<Instant> serverTime() {
    return node.serverTime();
  }

  /** Who holds {@code key}: {@code GET} and {@code PTTL} in one script. */
  @Override
  public Reply<Optional<KeyHolder>> inspect(String key) {
    return node.inspect(key);
  }

  /**
   * The key that holds the fencing counter of {@code key} on the server: the key prefix, {@code
   * "{fence}:"}, then {@code key}. (A lock key that itself starts with {@code "{fence}:"} would
   * share it: do not name resources so.)
   */
  public String fenceKey(String key) {
    return node.fenceKey(key);
  }

  /** The key as stored on the server: the key prefix, if any, followed by {@code key}. */
  public String storedKey(String key) {
    return node.settings().keyPrefix() + key;
  }

  /**
   * The Pub/Sub channel on which releases are published: the key prefix followed by {@code
   * "redlock:released"}; each message is the released key as stored (with the prefix).
   */
  public String releaseChannel() {
    return node.releaseChannel();
  }

  @Override
  public ReleaseSubscription onRelease(String key, Runnable listener) {
    return node.onRelease(key, listener);
  }

  /**
   * True while the release subscriber (started by the first {@link #onRelease}) is subscribed. For
   * tests and monitoring.
   */
  public boolean releaseSubscriberReady() {
    return node.releaseSubscriberReady();
  }

  /** Connections lent out right now; zero when no call is in flight. For tests and monitoring. */
  public int activeConnections() {
    return node.activeConnections();
  }

  /** Connections idle in the pool right now. For tests and monitoring. */
  public int idleConnections() {
    return node.idleConnections();
  }

  /** Closes every connection. Idempotent; later calls throw {@link IllegalStateException}. */
  @Override
  public void close() {
    node.close();
  }

  /** The node's name and settings, without the password. */
  @Override
  public String toString() {
    return node.toString();
  }

  /** Builds a {@link RedisLockNode}. Not thread-safe. */
  public static final class Builder {
    private final RedisSettingsBuilder settings = new RedisSettingsBuilder();

    private Builder() {}

    /**
     * Takes everything the URI gives (see the class documentation); later calls override it.
     *
     * @throws IllegalArgumentException for a malformed URI or an unknown or invalid option
     */
    public Builder uri(String uri) {
      settings.uri(uri);
      return this;
    }

    /** Host name or IP address (default {@code localhost}). */
    public Builder host(String host) {
      settings.host(host);
      return this;
    }

    /** Port (default 6379). */
    public Builder port(int port) {
      settings.port(port);
      return this;
    }

    /** Connect with TLS (what {@code rediss://} means). */
    public Builder tls(boolean tls) {
      settings.tls(tls);
      return this;
    }

    /** The ACL user (Redis 6+); the default user if not set. */
    public Builder user(String user) {
      settings.user(user);
      return this;
    }

    /** The password. */
    public Builder password(String password) {
      settings.password(password);
      return this;
    }

    /** The database index (default 0). */
    public Builder database(int database) {
      settings.database(database);
      return this;
    }

    /** Bound on connecting and on waiting for a pooled connection (default 1 s). */
    public Builder connectTimeout(Duration timeout) {
      settings.connectTimeout(timeout);
      return this;
    }

    /** Bound on set-up, validation and late-reply reads (default 2 s). */
    public Builder socketTimeout(Duration timeout) {
      settings.socketTimeout(timeout);
      return this;
    }

    /** Most connections open at once (default 8). */
    public Builder poolSize(int poolSize) {
      settings.poolSize(poolSize);
      return this;
    }

    /** Prepended to every lock key (default none). */
    public Builder keyPrefix(String keyPrefix) {
      settings.keyPrefix(keyPrefix);
      return this;
    }

    /** With TLS, check that the certificate names the host (default true). */
    public Builder verifyHostname(boolean verify) {
      settings.verifyHostname(verify);
      return this;
    }

    /** With TLS, the socket factory to use, e.g. with a custom trust store (default: the JVM's). */
    public Builder sslSocketFactory(SSLSocketFactory factory) {
      settings.sslSocketFactory(factory);
      return this;
    }

    /**
     * Builds the node. Nothing is connected yet: a node that is down now can still be created and
     * each call then fails with a transient exception until it is up.
     *
     * @throws IllegalArgumentException if the settings do not fit together
     */
    public RedisLockNode build() {
      return new RedisLockNode(new RedisNode(settings.build()));
    }
  }
}
