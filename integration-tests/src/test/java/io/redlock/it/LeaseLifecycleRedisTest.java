package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.LeaseLostException;
import io.redlock.LockTimeoutException;
import io.redlock.Redlock;
import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The lease lifecycle on three real Redis servers (keep-alive, loss, Lock, async, acquireAll,
 * resume), and keep-alive and loss on a mixed 3 Redis + 2 PostgreSQL quorum. Each fault is real: a
 * paused server, a key deleted on the server, a crashed database.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
@DisplayName("The lease lifecycle on real servers")
class LeaseLifecycleRedisTest {
  private static final Duration TTL = Duration.ofSeconds(1);
  private static final Pattern EVALSHA_CALLS = Pattern.compile("cmdstat_evalsha:calls=(\\d+)");

  private static RedisServers redis;

  @BeforeAll
  static void start() {
    redis = RedisServers.start(3, RedisServer.builder().faultInjection());
  }

  @AfterAll
  static void stop() {
    redis.close();
  }

  private static Redlock redlock() {
    return Redlock.builder()
        .nodeUris(redis.uris())
        .nodeTimeout(Duration.ofMillis(200)) // generous for a busy 2-core machine
        .retry(3, Duration.ofMillis(10), Duration.ofMillis(50))
        .build();
  }

  /** Compare-and-extend and compare-and-delete scripts run on all servers so far. */
  private static long scriptCalls() {
    long sum = 0;
    for (RedisServer server : redis) {
      Matcher m = EVALSHA_CALLS.matcher(server.command("INFO", "commandstats"));
      sum += m.find() ? Long.parseLong(m.group(1)) : 0;
    }
    return sum;
  }

  @Test
  @DisplayName("keep-alive holds a lease past its TTL, and sends nothing once released or closed")
  void keepAliveAndStop() throws Exception {
    try (Redlock redlock = redlock()) {
      Lease lease = redlock.tryAcquire("kept", TTL).orElseThrow().keepAlive();
      Thread.sleep(3 * TTL.toMillis());
      assertThat(lease.isValid()).isTrue();
      assertThat(lease.extensions()).isGreaterThanOrEqualTo(5);
      assertThat(redlock.tryAcquire("kept", TTL)).as("still held").isEmpty();

      lease.release();
      long afterRelease = scriptCalls();
      Thread.sleep(TTL.toMillis());
      assertThat(scriptCalls()).as("scripts run after release() returned").isEqualTo(afterRelease);

      Lease second =
          redlock
              .tryAcquire("kept-2", TTL)
              .orElseThrow()
              .keepAlive(KeepAlive.defaults().every(Duration.ofMillis(20)));
      CompletableFuture<LeaseLost> lost = second.whenLost().toCompletableFuture();
      Thread.sleep(200);
      redlock.close();
      long afterClose = scriptCalls();
      Thread.sleep(300);
      assertThat(scriptCalls()).as("scripts run after close() returned").isEqualTo(afterClose);
      assertThat(lost.get(10, TimeUnit.SECONDS).reason()).isEqualTo(LeaseLost.Reason.CLOSED);
    }
  }

  @Test
  @DisplayName("keep-alive stops for a lease the application dropped, and at the maximum hold time")
  void keepAliveBounded() throws Exception {
    try (Redlock redlock = redlock()) {
      redlock
          .tryAcquire("dropped", TTL)
          .orElseThrow()
          .keepAlive(KeepAlive.defaults().every(Duration.ofMillis(20)));
      long quiet = 0;
      for (int i = 0; i < 300 && quiet < 5; i++) {
        System.gc();
        long before = scriptCalls();
        Thread.sleep(60);
        quiet = scriptCalls() == before ? quiet + 1 : 0;
      }
      assertThat(quiet).as("rounds of 60 ms without a script call").isGreaterThanOrEqualTo(5);
      // granted by a majority at least (a node may miss its 200 ms on a busy machine)
      assertThat(redlock.acquire("dropped", TTL, Duration.ofSeconds(5)).release().deleted())
          .as("it ran out, and could be taken again")
          .isGreaterThanOrEqualTo(redlock.quorum());

      Lease bounded =
          redlock
              .tryAcquire("bounded", TTL)
              .orElseThrow()
              .keepAlive(KeepAlive.defaults().maxHold(Duration.ofMillis(1_500)));
      LeaseLost why = bounded.whenLost().toCompletableFuture().get(10, TimeUnit.SECONDS);
      assertThat(why.reason()).isEqualTo(LeaseLost.Reason.EXPIRED);
      assertThat(bounded.extensions()).isBetween(3, 5);
    }
  }

  @Test
  @DisplayName(
      "a lease is declared lost in time when two of three servers freeze, and when its key is"
          + " deleted on two of them")
  void lossOnRealFaults() throws Exception {
    try (Redlock redlock = redlock()) {
      Duration margin = Duration.ofMillis(400);
      Lease lease =
          redlock
              .tryAcquire("frozen", Duration.ofSeconds(2))
              .orElseThrow()
              .keepAlive(KeepAlive.defaults().lostMargin(margin));
      List<Long> validityAtLoss = new ArrayList<>();
      CompletableFuture<LeaseLost> lost = new CompletableFuture<>();
      lease.onLost(
          l -> {
            validityAtLoss.add(lease.remainingValidity().toMillis());
            lost.complete(l);
          });
      redis.get(0).pause();
      redis.get(1).pause();
      try {
        LeaseLost why = lost.get(10, TimeUnit.SECONDS);
        assertThat(why.reason()).isEqualTo(LeaseLost.Reason.UNREACHABLE);
        assertThat(why.detail()).contains(redis.get(0).address());
        assertThatThrownBy(lease::checkValid).isInstanceOf(LeaseLostException.class);
      } finally {
        redis.get(0).resume();
        redis.get(1).resume();
      }

      Lease gone = redlock.tryAcquire("gone", Duration.ofSeconds(2)).orElseThrow().keepAlive();
      CompletableFuture<LeaseLost> goneLost = gone.whenLost().toCompletableFuture();
      redis.get(0).command("DEL", "gone");
      redis.get(2).command("DEL", "gone");
      assertThat(goneLost.get(10, TimeUnit.SECONDS).reason())
          .isEqualTo(LeaseLost.Reason.TOKEN_GONE);
    }
  }

  @Test
  @DisplayName("asLock is reentrant, excludes other threads, and is kept alive while held")
  void asLock() throws Exception {
    try (Redlock redlock = redlock()) {
      Lock lock = redlock.asLock("lock", TTL);
      lock.lock();
      lock.lock();
      Thread.sleep(2 * TTL.toMillis());
      CompletableFuture<Boolean> other = new CompletableFuture<>();
      new Thread(
              () -> {
                try {
                  other.complete(lock.tryLock(200, TimeUnit.MILLISECONDS));
                } catch (InterruptedException e) {
                  other.completeExceptionally(e);
                }
              })
          .start();
      assertThat(other.get(10, TimeUnit.SECONDS)).as("another thread, past the TTL").isFalse();
      lock.unlock();
      assertThat(redlock.tryAcquire("lock", TTL)).as("held once more").isEmpty();
      lock.unlock();
      assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
      assertThat(redlock.tryAcquire("lock", TTL)).isPresent();
    }
  }

  @Test
  @DisplayName("async acquisitions wait without threads; acquireAll and resume work across clients")
  void asyncAllAndResume() throws Exception {
    try (Redlock redlock = redlock();
        Redlock other = redlock()) {
      Lease held = redlock.tryAcquire("crowd", Duration.ofSeconds(30)).orElseThrow();
      int threadsBefore = ManagementFactory.getThreadMXBean().getThreadCount();
      List<CompletableFuture<Lease>> waiting = new ArrayList<>();
      for (int i = 0; i < 1_000; i++) {
        waiting.add(other.acquireAsync("crowd", TTL, Duration.ofSeconds(20)));
      }
      Thread.sleep(500);
      int threadsDuring = ManagementFactory.getThreadMXBean().getThreadCount();
      System.out.printf(
          "1,000 async acquisitions waiting on real Redis: threads %d before, %d during%n",
          threadsBefore, threadsDuring);
      // a thread per waiter would be 1,000; the library's own threads (a reader per busy
      // connection when a loaded machine makes calls time out) stay within a small bound
      assertThat(threadsDuring - threadsBefore).isLessThan(100);
      held.release();
      AtomicInteger granted = new AtomicInteger();
      for (CompletableFuture<Lease> f : waiting) {
        try {
          f.get(60, TimeUnit.SECONDS).release();
          granted.incrementAndGet();
        } catch (ExecutionException e) {
          assertThat(e.getCause()).isInstanceOf(LockTimeoutException.class);
        }
      }
      assertThat(granted.get()).isPositive();

      Lease all = redlock.acquireAll(Set.of("a", "b", "c"), TTL, Duration.ofSeconds(5));
      assertThat(other.tryAcquire("b", TTL)).isEmpty();
      all.release();
      assertThat(other.tryAcquire("b", TTL)).isPresent();

      Lease mine = redlock.tryAcquire("handed-over", Duration.ofSeconds(5)).orElseThrow();
      Lease resumed = other.resume("handed-over", mine.token(), Duration.ofSeconds(5));
      assertThat(resumed.extend(Duration.ofSeconds(5))).isTrue();
      assertThat(resumed.release().deleted()).isEqualTo(3);
      assertThat(redlock.tryAcquire("handed-over", TTL)).isPresent();
    }
  }

  @Test
  @DisplayName(
      "on 3 Redis + 2 PostgreSQL, keep-alive holds past the TTL, and a loss is told in time when"
          + " a majority crashes")
  void mixedQuorum() throws Exception {
    try (PostgresServer pg1 = PostgresServer.startLocal();
        PostgresServer pg2 = PostgresServer.startLocal()) {
      List<String> uris = new ArrayList<>(redis.uris());
      uris.add(pg1.jdbcUrl() + "&redlock.createTable=true");
      uris.add(pg2.jdbcUrl() + "&redlock.createTable=true");
      try (Redlock redlock =
          Redlock.builder().nodeUris(uris).nodeTimeout(Duration.ofMillis(200)).build()) {
        Lease lease =
            redlock
                .acquire("mixed", Duration.ofSeconds(2), Duration.ofSeconds(10))
                .keepAlive(KeepAlive.defaults().lostMargin(Duration.ofMillis(600)));
        Thread.sleep(4_000);
        assertThat(lease.isValid()).as("kept alive past twice its TTL").isTrue();
        CompletableFuture<LeaseLost> lost = lease.whenLost().toCompletableFuture();
        pg1.crash();
        pg2.crash();
        redis.get(2).pause();
        try {
          LeaseLost why = lost.get(10, TimeUnit.SECONDS);
          assertThat(why.reason()).isEqualTo(LeaseLost.Reason.UNREACHABLE);
        } finally {
          redis.get(2).resume();
        }
      }
    }
  }
}
