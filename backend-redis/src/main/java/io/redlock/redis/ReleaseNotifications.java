package io.redlock.redis;

import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.support.ReleaseListeners;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisPubSub;

/**
 * Release notifications of one node: one subscriber connection, opened when the first listener
 * registers, subscribed to the node's release channel on a daemon thread, dispatching each
 * published key to the listeners of that key. A lost connection is opened again after a pause that
 * doubles up to {@link #MAX_BACKOFF}; after every (re)subscription all listeners are called, since
 * releases may have been missed meanwhile.
 */
final class ReleaseNotifications implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ReleaseNotifications.class);
  private static final AtomicInteger THREADS = new AtomicInteger();
  private static final Duration MIN_BACKOFF = Duration.ofMillis(50);
  static final Duration MAX_BACKOFF = Duration.ofSeconds(2);

  private final String name;
  private final HostAndPort address;
  private final JedisClientConfig config;
  private final String channel;
  private final RedisErrors errors;

  /** Listeners by stored key. */
  private final ReleaseListeners<String> listeners;

  private final AtomicBoolean started = new AtomicBoolean();
  private volatile boolean closed;
  private volatile Jedis connection;
  private volatile Thread thread;
  private volatile boolean subscribed;

  ReleaseNotifications(
      String name,
      HostAndPort address,
      JedisClientConfig config,
      String channel,
      RedisErrors errors) {
    this.name = name;
    this.address = address;
    this.config = config;
    this.channel = channel;
    this.errors = errors;
    this.listeners = new ReleaseListeners<>(name);
  }

  /** Registers {@code listener} for the stored key; starts the subscriber on first use. */
  ReleaseSubscription register(String storedKey, Runnable listener) {
    ReleaseSubscription subscription = listeners.register(storedKey, listener);
    if (started.compareAndSet(false, true)) {
      Thread t =
          new Thread(this::run, "redlock-redis-notify-" + THREADS.incrementAndGet() + " " + name);
      t.setDaemon(true);
      thread = t;
      t.start();
    }
    return subscription;
  }

  /** True while the subscriber connection is subscribed (for tests). */
  boolean subscribed() {
    return subscribed;
  }

  private void run() {
    long backoffNanos = MIN_BACKOFF.toNanos();
    while (!closed) {
      try (Jedis jedis = new Jedis(address, config)) {
        connection = jedis;
        if (!closed) {
          jedis.subscribe(new Subscriber(), channel); // until the connection breaks
          backoffNanos = MIN_BACKOFF.toNanos();
        }
      } catch (RuntimeException e) {
        // at debug: the engine polls meanwhile, so this is not an error
        log.debug("{}: release notifications interrupted ({})", name, errors.scrub(e.toString()));
      } finally {
        subscribed = false;
        connection = null;
      }
      try {
        TimeUnit.NANOSECONDS.sleep(closed ? 0 : backoffNanos);
      } catch (InterruptedException e) {
        return; // close() interrupts the pause
      }
      backoffNanos = Math.min(backoffNanos * 2, MAX_BACKOFF.toNanos());
    }
  }

  private final class Subscriber extends JedisPubSub {
    @Override
    public void onSubscribe(String subscribedChannel, int subscribedChannels) {
      subscribed = true;
      // Releases while not subscribed were missed: a spurious wakeup costs only one retry.
      listeners.releasedAll();
    }

    @Override
    public void onMessage(String fromChannel, String storedKey) {
      listeners.released(storedKey);
    }
  }

  /** Stops the subscriber and closes its connection. Idempotent. */
  @Override
  public void close() {
    closed = true;
    Jedis jedis = connection;
    if (jedis != null) {
      try {
        jedis.disconnect(); // breaks the blocking read of the subscription
      } catch (RuntimeException e) {
        log.debug("{}: closing the release subscriber: {}", name, e.toString());
      }
    }
    Thread t = thread;
    if (t != null) {
      t.interrupt();
    }
  }
}
