package io.redlock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.KeepAlive;
import io.redlock.LeaseLostException;
import io.redlock.Redlock;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The loss matrix of docs/safety.md for {@link RedlockRegistryLock}, on three real Redis servers,
 * with the semantics of the library's {@code asLock}: once the holder's lease is lost, its
 * reentrant {@code lock}/{@code tryLock} throw {@link LeaseLostException} (never "locked"), another
 * thread of this JVM is not told "locked" before the holder's last {@code unlock}, every {@code
 * unlock} throws {@link IllegalMonitorStateException} caused by the loss, and the last one frees
 * the lock; another process is granted it only after the holder stopped being told "locked".
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("The loss matrix: RedlockRegistryLock on 3 Redis")
class LossMatrixRegistryLockTest {
  private static final Duration TTL = Duration.ofMillis(1_500);
  private static RedisServers redis;

  private Redlock redlock1;
  private Redlock redlock2;
  private Redlock other;
  private String key;
  private ExecutorService threads;

  /** How the holder's lease ends (a registry lock, as {@code asLock}, is always kept alive). */
  enum Ending {
    /** Its key deleted on 2 of 3 nodes, as {@code redlock unlock --force} does. */
    DELETED,
    /** 2 of 3 nodes frozen (SIGSTOP). */
    MAJORITY_UNREACHABLE,
    /** Released through another handle of its token, from {@code resume}. */
    RELEASED_ELSEWHERE,
    /** The keep-alive stopped at {@code KeepAlive.maxHold} and the TTL ran out. */
    TTL_RAN_OUT
  }

  @BeforeAll
  static void startServers() {
    redis = RedisServers.start(3, RedisServer.builder().faultInjection());
  }

  @AfterAll
  static void stopServers() {
    if (redis != null) {
      redis.close();
    }
  }

  private static Redlock redlock() {
    return Redlock.builder()
        .nodeUris(redis.uris())
        .nodeTimeout(Duration.ofMillis(200)) // generous for a busy 2-core machine
        .retry(3, Duration.ofMillis(5), Duration.ofMillis(30))
        .build();
  }

  @BeforeEach
  void setUp() {
    redlock1 = redlock();
    redlock2 = redlock();
    other = redlock();
    key = "key-" + UUID.randomUUID();
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void tearDown() {
    resumeAll();
    threads.shutdownNow();
    redlock1.close();
    redlock2.close();
    other.close();
  }

  private static void resumeAll() {
    for (RedisServer server : redis) {
      server.resume();
    }
  }

  private void end(Ending ending, String resource) {
    switch (ending) {
      case DELETED -> {
        redis.get(0).command("DEL", resource);
        redis.get(1).command("DEL", resource);
      }
      case MAJORITY_UNREACHABLE -> {
        redis.get(0).pause();
        redis.get(1).pause();
      }
      case RELEASED_ELSEWHERE -> {
        String token = redis.get(2).command("GET", resource);
        other.resume(resource, token, TTL).release();
      }
      case TTL_RAN_OUT -> {} // the keep-alive stops by itself at maxHold
    }
  }

  /** Whether another thread of this JVM is told "locked" by tryLock (and unlocks again). */
  private boolean anotherThreadLocks(RedlockRegistryLock lock) throws Exception {
    return threads
        .submit(
            () -> {
              if (lock.tryLock()) {
                lock.unlock();
                return true;
              }
              return false;
            })
        .get(30, TimeUnit.SECONDS);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Ending.class)
  @DisplayName("after a loss: reentry throws, other threads wait, unlock names the loss")
  void lostWhileHeld(Ending ending) throws Exception {
    KeepAlive keepAlive =
        ending == Ending.TTL_RAN_OUT
            ? KeepAlive.defaults().maxHold(Duration.ofMillis(200))
            : KeepAlive.defaults();
    RedlockLockRegistry registry = new RedlockLockRegistry(redlock1, TTL, "si:", keepAlive);
    RedlockLockRegistry process2 = new RedlockLockRegistry(redlock2, TTL, "si:");
    RedlockRegistryLock lock = registry.obtain(key);
    lock.lock();
    lock.lock(); // two holds: the holder is in a nested section

    // Another process polls for the lock from now on; when it is granted is compared with the
    // holder's last "locked" below.
    AtomicLong lastLockedCallStart = new AtomicLong(Long.MIN_VALUE);
    CompletableFuture<Long> process2Granted = new CompletableFuture<>();
    CountDownLatch process2Release = new CountDownLatch(1);
    boolean concurrent = ending == Ending.MAJORITY_UNREACHABLE || ending == Ending.TTL_RAN_OUT;

    end(ending, lock.resource());
    try {
      if (concurrent) {
        pollFromProcess2(process2, process2Granted, process2Release);
      }
      // The holder's reentry until it is refused: the keep-alive notices within its period plus
      // the margin, or the lease runs out.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      Throwable refused = null;
      while (refused == null && System.nanoTime() < deadline) {
        long began = System.nanoTime();
        try {
          boolean reentered = lock.tryLock();
          assertThat(reentered).as("reentrant tryLock answers true or throws").isTrue();
          lastLockedCallStart.set(began);
          lock.unlock();
        } catch (LeaseLostException | IllegalMonitorStateException e) {
          refused = e;
        }
        Thread.sleep(20);
      }
      assertThat(refused).as("reentry refused once the lease is lost").isNotNull();
      if (refused instanceof IllegalMonitorStateException) {
        // the inner unlock of a reentry found the loss: its own hold went, the two others stay
        assertThat(refused.getCause()).isInstanceOf(LeaseLostException.class);
      }
    } finally {
      resumeAll();
    }

    // Every later reentry is refused too, by lock and by tryLock: never "locked" again.
    assertThatThrownBy(lock::tryLock).isInstanceOf(LeaseLostException.class);
    assertThatThrownBy(lock::lock).isInstanceOf(LeaseLostException.class);
    assertThatThrownBy(() -> lock.tryLock(10, TimeUnit.MILLISECONDS))
        .isInstanceOf(LeaseLostException.class);
    assertThat(lock.isHeldByCurrentThread()).as("the holds stay until unlocked").isTrue();

    // Another thread of this JVM is not told "locked" while the holder still has holds.
    assertThat(anotherThreadLocks(lock)).as("another thread before the last unlock").isFalse();

    if (!concurrent) {
      pollFromProcess2(process2, process2Granted, process2Release);
    }
    long grantedAt = process2Granted.get(15, TimeUnit.SECONDS);
    assertThat(lastLockedCallStart.get())
        .as("the holder was last told locked before another process was granted the lock")
        .isLessThan(grantedAt);

    // Each unlock names the loss; the last one frees this JVM's lock and leaves process 2's alone.
    assertThatThrownBy(lock::unlock)
        .isInstanceOf(IllegalMonitorStateException.class)
        .hasMessageContaining("lost while held")
        .hasCauseInstanceOf(LeaseLostException.class);
    assertThat(anotherThreadLocks(lock)).as("another thread before the last unlock").isFalse();
    assertThatThrownBy(lock::unlock)
        .isInstanceOf(IllegalMonitorStateException.class)
        .hasCauseInstanceOf(LeaseLostException.class);
    assertThat(lock.isLocked()).as("free in this JVM after the last unlock").isFalse();
    assertThatThrownBy(lock::unlock)
        .isInstanceOf(IllegalMonitorStateException.class)
        .hasMessageContaining("not held by this thread");
    assertThat(lock.tryLock()).as("process 2 still holds it").isFalse();

    // Afresh once process 2 lets go: a new lease, then normal service.
    process2Release.countDown();
    assertThat(lock.tryLock(10, TimeUnit.SECONDS)).isTrue();
    lock.unlock();
  }

  /**
   * Process 2 polls on a thread of its own until granted (at most 15 s), then holds the lock until
   * {@code release} opens.
   */
  private void pollFromProcess2(
      RedlockLockRegistry process2, CompletableFuture<Long> granted, CountDownLatch release) {
    RedlockRegistryLock theirs = process2.obtain(key);
    threads.submit(
        () -> {
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
          while (System.nanoTime() < deadline) {
            if (theirs.tryLock()) {
              granted.complete(System.nanoTime());
              try {
                release.await(60, TimeUnit.SECONDS);
              } finally {
                theirs.unlock();
              }
              return null;
            }
            Thread.sleep(20);
          }
          granted.completeExceptionally(new AssertionError("process 2 was never granted"));
          return null;
        });
  }
}
