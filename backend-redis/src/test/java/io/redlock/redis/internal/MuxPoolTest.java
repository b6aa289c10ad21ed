package io.redlock.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.testservers.RedisServer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.commons.pool2.PooledObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionFactory;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.DefaultJedisSocketFactory;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.exceptions.JedisConnectionException;

/** The connection pool's counts, on connections to a real Redis server. */
@Timeout(60)
@DisplayName("MuxPool")
class MuxPoolTest {
  private static RedisServer redis;

  @BeforeAll
  static void start() {
    redis = RedisServer.start();
  }

  @AfterAll
  static void stop() {
    redis.close();
  }

  /**
   * Opens real connections; the next one waits for {@code gate} first if one is set, and then fails
   * instead if {@code failAfterGate} is set.
   */
  private static final class GatedFactory extends ConnectionFactory {
    volatile CountDownLatch gate;
    volatile boolean failAfterGate;
    final CountDownLatch waiting = new CountDownLatch(1);

    GatedFactory(HostAndPort address, JedisClientConfig config) {
      super(
          ConnectionFactory.builder()
              .connectionBuilder(
                  new MuxConnection.Builder()
                      .socketFactory(new DefaultJedisSocketFactory(address, config))
                      .clientConfig(config))
              .clientConfig(config)
              .hostAndPort(address));
    }

    @Override
    public PooledObject<Connection> makeObject() throws Exception {
      CountDownLatch g = gate;
      if (g != null) {
        gate = null;
        waiting.countDown();
        g.await(30, TimeUnit.SECONDS);
        if (failAfterGate) {
          throw new JedisConnectionException("injected: the connect failed");
        }
      }
      return super.makeObject();
    }
  }

  /** Connections to the test server, opened for real. */
  private static GatedFactory factory() {
    DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder();
    redis.password().ifPresent(config::password);
    return new GatedFactory(new HostAndPort(redis.host(), redis.port()), config.build());
  }

  @Test
  @DisplayName("a warm-up connection still being opened is not counted as lent out")
  void warmUpIsNotLent() throws Exception {
    GatedFactory factory = factory();
    CountDownLatch release = new CountDownLatch(1);
    factory.gate = release;
    MuxPool pool = new MuxPool(factory, 4, Duration.ofMinutes(1), 16, ForkJoinPool.commonPool());
    try {
      CompletableFuture<Void> warmUp =
          CompletableFuture.runAsync(
              () -> {
                try {
                  pool.addIdle();
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              });
      assertThat(factory.waiting.await(10, TimeUnit.SECONDS)).isTrue();

      MuxConnection borrowed = pool.borrow(Duration.ofSeconds(5));
      assertThat(pool.active()).as("one borrowed, the warm-up still connecting").isEqualTo(1);
      pool.giveBack(borrowed);
      assertThat(pool.active()).as("everything borrowed was given back").isZero();
      assertThat(pool.idle()).isEqualTo(1);

      release.countDown();
      warmUp.get(10, TimeUnit.SECONDS);
      assertThat(pool.active()).isZero();
      assertThat(pool.idle()).as("the warm-up connection joined the idle ones").isEqualTo(2);
    } finally {
      release.countDown();
      pool.close();
    }
  }

  @Test
  @DisplayName("warm-ups and clears never show a connection as lent when nobody borrowed one")
  void lentCountsOnlyBorrowers() throws Exception {
    GatedFactory factory = factory();
    MuxPool pool = new MuxPool(factory, 1, Duration.ofMinutes(1), 16, ForkJoinPool.commonPool());
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong reads = new AtomicLong();
    AtomicLong wrong = new AtomicLong();
    Thread reader =
        new Thread(
            () -> {
              while (!stop.get()) {
                reads.incrementAndGet();
                if (pool.active() != 0) {
                  wrong.incrementAndGet();
                }
              }
            });
    reader.start();
    try {
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
      for (int i = 0; i < 100_000 && System.nanoTime() < end; i++) {
        pool.addIdle(); // opens a connection and keeps it idle
        pool.clear(); // closes it again
      }
    } finally {
      stop.set(true);
      reader.join(10_000);
      pool.close();
    }
    assertThat(reads.get()).isPositive();
    assertThat(wrong.get()).as("reads of active() that were not 0, of %d", reads.get()).isZero();
  }

  /** A waiting call that records what it got. */
  private static final class Recording implements MuxPool.Waiter {
    final CompletableFuture<MuxConnection> served = new CompletableFuture<>();
    volatile boolean wanted = true;

    @Override
    public boolean serve(MuxConnection connection) {
      return wanted && served.complete(connection);
    }

    @Override
    public boolean fail(Exception failure) {
      return wanted && served.completeExceptionally(failure);
    }
  }

  @Test
  @DisplayName(
      "waiting calls hold no thread: the next connection given back serves them in order, and one"
          + " that no longer wants it is skipped")
  void waitersServedInOrder() throws Exception {
    MuxPool pool = new MuxPool(factory(), 1, Duration.ofMinutes(1), 16, ForkJoinPool.commonPool());
    try {
      MuxConnection only = pool.borrow(Duration.ofSeconds(5));
      Recording dropped = new Recording();
      Recording first = new Recording();
      Recording second = new Recording();
      pool.await(dropped);
      pool.await(first);
      pool.await(second);
      dropped.wanted = false;
      assertThat(first.served).isNotDone();

      pool.giveBack(only);
      assertThat(first.served.get(5, TimeUnit.SECONDS)).isSameAs(only);
      assertThat(dropped.served).isNotDone();
      assertThat(second.served).isNotDone();
      assertThat(pool.active()).isEqualTo(1);

      pool.giveBack(only);
      assertThat(second.served.get(5, TimeUnit.SECONDS)).isSameAs(only);
      pool.giveBack(only);
      assertThat(pool.active()).isZero();
      assertThat(pool.idle()).isEqualTo(1);
    } finally {
      pool.close();
    }
  }

  @Test
  @DisplayName("a waiting call gets a new connection while fewer than the maximum are open")
  void waiterGetsNewConnection() throws Exception {
    MuxPool pool = new MuxPool(factory(), 2, Duration.ofMinutes(1), 16, ForkJoinPool.commonPool());
    try {
      MuxConnection busy = pool.borrow(Duration.ofSeconds(5));
      Recording waiter = new Recording();
      pool.await(waiter);
      MuxConnection fresh = waiter.served.get(5, TimeUnit.SECONDS);
      assertThat(fresh).isNotSameAs(busy);
      assertThat(pool.active()).isEqualTo(2);
      pool.giveBack(busy);
      pool.giveBack(fresh);
    } finally {
      pool.close();
    }
  }

  @Test
  @DisplayName("beyond the bound, a call fails at once; closing fails the ones still waiting")
  void boundedAndFailedOnClose() throws Exception {
    MuxPool pool = new MuxPool(factory(), 1, Duration.ofMinutes(1), 2, ForkJoinPool.commonPool());
    MuxConnection only = pool.borrow(Duration.ofSeconds(5));
    Recording a = new Recording();
    Recording b = new Recording();
    Recording c = new Recording();
    pool.await(a);
    pool.await(b);
    pool.await(c);
    assertThat(c.served).isCompletedExceptionally();
    assertThat(a.served).isNotDone();

    pool.close();
    assertThat(a.served).isCompletedExceptionally();
    assertThat(b.served).isCompletedExceptionally();
    pool.giveBack(only);
  }

  /** Runs {@code pool.addIdle()} (the node's warm-up) on another thread. */
  private static CompletableFuture<Void> warmUp(MuxPool pool) {
    return CompletableFuture.runAsync(
        () -> {
          try {
            pool.addIdle();
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
  }

  @Test
  @DisplayName(
      "a call that begins waiting while the warm-up connection is being opened gets that"
          + " connection")
  void waiterServedByWarmUp() throws Exception {
    GatedFactory factory = factory();
    CountDownLatch release = new CountDownLatch(1);
    factory.gate = release;
    MuxPool pool = new MuxPool(factory, 1, Duration.ofMinutes(1), 16, ForkJoinPool.commonPool());
    try {
      CompletableFuture<Void> warmUp = warmUp(pool);
      assertThat(factory.waiting.await(10, TimeUnit.SECONDS)).isTrue();
      // no idle connection, and the only slot is taken by the warm-up: the call queues
      Recording waiter = new Recording();
      pool.await(waiter);
      assertThat(waiter.served).isNotDone();

      release.countDown();
      warmUp.get(10, TimeUnit.SECONDS);
      MuxConnection served = waiter.served.get(5, TimeUnit.SECONDS);
      assertThat(served).isNotNull();
      assertThat(pool.active()).as("lent to the waiting call, not kept idle").isEqualTo(1);
      assertThat(pool.idle()).isZero();
      pool.giveBack(served);
      assertThat(pool.active()).isZero();
      assertThat(pool.idle()).isEqualTo(1);
    } finally {
      release.countDown();
      pool.close();
    }
  }

  @Test
  @DisplayName(
      "a call that waited for the warm-up's slot gets an opening of its own when the warm-up's"
          + " connect fails")
  void waiterOutlivesFailedWarmUp() throws Exception {
    GatedFactory factory = factory();
    CountDownLatch release = new CountDownLatch(1);
    factory.gate = release;
    factory.failAfterGate = true;
    MuxPool pool = new MuxPool(factory, 1, Duration.ofMinutes(1), 16, ForkJoinPool.commonPool());
    try {
      CompletableFuture<Void> warmUp = warmUp(pool);
      assertThat(factory.waiting.await(10, TimeUnit.SECONDS)).isTrue();
      Recording waiter = new Recording();
      pool.await(waiter);
      assertThat(waiter.served).isNotDone();

      release.countDown();
      assertThatThrownBy(() -> warmUp.get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class);
      MuxConnection served = waiter.served.get(5, TimeUnit.SECONDS);
      assertThat(served).as("the call's own opening succeeded").isNotNull();
      assertThat(pool.active()).isEqualTo(1);
      pool.giveBack(served);
      assertThat(pool.active()).isZero();
    } finally {
      release.countDown();
      pool.close();
    }
  }

  @Test
  @DisplayName(
      "a call that waited for the slot of a failed borrow (status) gets an opening of its own")
  void waiterOutlivesFailedBorrow() throws Exception {
    GatedFactory factory = factory();
    CountDownLatch release = new CountDownLatch(1);
    factory.gate = release;
    factory.failAfterGate = true;
    MuxPool pool = new MuxPool(factory, 1, Duration.ofMinutes(1), 16, ForkJoinPool.commonPool());
    try {
      CompletableFuture<MuxConnection> borrowed =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return pool.borrow(Duration.ofSeconds(5));
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              });
      assertThat(factory.waiting.await(10, TimeUnit.SECONDS)).isTrue();
      Recording waiter = new Recording();
      pool.await(waiter);
      assertThat(waiter.served).isNotDone();

      release.countDown();
      assertThatThrownBy(() -> borrowed.get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class);
      MuxConnection served = waiter.served.get(5, TimeUnit.SECONDS);
      assertThat(served).isNotNull();
      pool.giveBack(served);
      assertThat(pool.active()).isZero();
    } finally {
      release.countDown();
      pool.close();
    }
  }

  @Test
  @DisplayName(
      "a connection given back while a call has counted itself but is not queued yet goes idle")
  void callBetweenCountingAndQueueing() throws Exception {
    MuxPool pool = new MuxPool(factory(), 1, Duration.ofMinutes(1), 16, ForkJoinPool.commonPool());
    java.lang.reflect.Field field = MuxPool.class.getDeclaredField("waitingCount");
    field.setAccessible(true);
    java.util.concurrent.atomic.AtomicInteger waitingCount =
        (java.util.concurrent.atomic.AtomicInteger) field.get(pool);
    try {
      MuxConnection only = pool.borrow(Duration.ofSeconds(5));
      waitingCount.incrementAndGet(); // a call inside await(), between counting and queueing
      pool.giveBack(only); // it once went back and forth until the stack overflowed
      assertThat(pool.idle()).isEqualTo(1);
      waitingCount.decrementAndGet();
      Recording waiter = new Recording();
      pool.await(waiter); // the call, once queued, finds it itself
      assertThat(waiter.served.get(5, TimeUnit.SECONDS)).isSameAs(only);
      pool.giveBack(only);
    } finally {
      pool.close();
    }
  }
}
