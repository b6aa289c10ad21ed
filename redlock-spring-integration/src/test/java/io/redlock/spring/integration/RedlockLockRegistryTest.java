package io.redlock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The registry as Spring Integration tests its own (Redis, JDBC): a lock per key, reentrancy,
 * exclusion across threads and across two registries (two Redlocks: two processes), unlock by a
 * non-owner refused, expiry; plus keep-alive, loss and fencing, on 3 real Redis servers.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("RedlockLockRegistry on 3 Redis")
class RedlockLockRegistryTest {
  private static final Duration TTL = Duration.ofSeconds(2);
  private static RedisServers redis;

  private Redlock redlock1;
  private Redlock redlock2;
  private RedlockLockRegistry registry1;
  private RedlockLockRegistry registry2;
  private String key;
  private ExecutorService threads;

  @BeforeAll
  static void startServers() {
    redis = RedisServers.start(3);
  }

  @AfterAll
  static void stopServers() {
    if (redis != null) {
      redis.close();
    }
  }

  static Redlock redlock() {
    return Redlock.builder()
        .nodeUris(redis.uris())
        .nodeTimeout(Duration.ofMillis(500))
        .retry(3, Duration.ofMillis(5), Duration.ofMillis(30))
        .fencing(true)
        .build();
  }

  @BeforeEach
  void setUp() {
    redlock1 = redlock();
    redlock2 = redlock();
    registry1 = new RedlockLockRegistry(redlock1, TTL, "si:");
    registry2 = new RedlockLockRegistry(redlock2, TTL, "si:");
    key = "key-" + UUID.randomUUID();
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void tearDown() {
    threads.shutdownNow();
    redlock1.close();
    redlock2.close();
  }

  private boolean heldOnNodes() {
    for (RedisServer server : redis) {
      if (server.command("GET", "si:" + key) == null) {
        return false;
      }
    }
    return true;
  }

  /** Whether another thread of this JVM could take the lock at once. */
  private boolean freeForAnotherThread(Lock lock) throws Exception {
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

  @Test
  @DisplayName("obtain gives one Lock per key: the same instance for the same key")
  void aLockPerKey() {
    assertThat(registry1.obtain(key)).isSameAs(registry1.obtain(key));
    assertThat(registry1.obtain(key)).isNotSameAs(registry1.obtain(key + "-2"));
    assertThat(registry1.obtain(key).resource()).isEqualTo("si:" + key);
    assertThatThrownBy(() -> registry1.obtain(42)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> registry1.obtain("")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  @DisplayName("lock holds the key on the nodes, unlock deletes it")
  void lockAndUnlock() {
    Lock lock = registry1.obtain(key);
    lock.lock();
    try {
      assertThat(heldOnNodes()).isTrue();
    } finally {
      lock.unlock();
    }
    assertThat(redis.get(0).command("GET", "si:" + key)).isNull();
  }

  @Test
  @DisplayName("reentrant: locked three times by one thread, free only after the third unlock")
  void reentrant() throws Exception {
    RedlockRegistryLock lock = registry1.obtain(key);
    lock.lock();
    assertThat(lock.tryLock()).isTrue();
    lock.lockInterruptibly();
    assertThat(lock.isHeldByCurrentThread()).isTrue();
    lock.unlock();
    lock.unlock();
    assertThat(registry2.obtain(key).tryLock()).as("other registry, one hold left").isFalse();
    assertThat(freeForAnotherThread(lock)).isFalse();
    lock.unlock();
    assertThat(lock.isLocked()).isFalse();
    assertThat(freeForAnotherThread(lock)).isTrue();
  }

  @Test
  @DisplayName("exclusion across threads: a second thread waits until the first unlocks")
  void twoThreads() throws Exception {
    Lock lock = registry1.obtain(key);
    lock.lock();
    CountDownLatch started = new CountDownLatch(1);
    Future<Boolean> second =
        threads.submit(
            () -> {
              started.countDown();
              assertThat(lock.tryLock(100, TimeUnit.MILLISECONDS)).isFalse();
              lock.lock(); // waits
              lock.unlock();
              return true;
            });
    started.await();
    Thread.sleep(400);
    assertThat(second.isDone()).isFalse();
    lock.unlock();
    assertThat(second.get(30, TimeUnit.SECONDS)).isTrue();
  }

  @Test
  @DisplayName("exclusion across two registries: the other one waits until the holder unlocks")
  void twoRegistries() throws Exception {
    Lock lock1 = registry1.obtain(key);
    Lock lock2 = registry2.obtain(key);
    lock1.lock();
    assertThat(lock2.tryLock(200, TimeUnit.MILLISECONDS)).isFalse();
    CompletableFuture<Long> waited =
        CompletableFuture.supplyAsync(
            () -> {
              long start = System.nanoTime();
              lock2.lock();
              lock2.unlock();
              return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            },
            threads);
    Thread.sleep(300);
    assertThat(waited).isNotDone();
    lock1.unlock();
    assertThat(waited.get(30, TimeUnit.SECONDS)).isGreaterThanOrEqualTo(250);
  }

  @Test
  @DisplayName("unlock by a thread that does not hold the lock is refused, and the lock stays held")
  void unlockByNonOwner() throws Exception {
    Lock lock = registry1.obtain(key);
    assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
    lock.lock();
    try {
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      threads
          .submit(
              () -> {
                try {
                  lock.unlock();
                } catch (Throwable t) {
                  thrown.set(t);
                }
              })
          .get(30, TimeUnit.SECONDS);
      assertThat(thrown.get())
          .isInstanceOf(IllegalMonitorStateException.class)
          .hasMessageContaining("not held by this thread");
      assertThat(heldOnNodes()).isTrue();
      assertThat(registry2.obtain(key).tryLock()).isFalse();
    } finally {
      lock.unlock();
    }
  }

  @Test
  @DisplayName("expiry: unused locks are forgotten, held ones are kept")
  void expireUnused() throws Exception {
    RedlockRegistryLock unused = registry1.obtain(key + "-unused");
    RedlockRegistryLock held = registry1.obtain(key);
    held.lock();
    try {
      Thread.sleep(50);
      registry1.expireUnusedOlderThan(10);
      assertThat(registry1.obtain(key + "-unused")).isNotSameAs(unused);
      assertThat(registry1.obtain(key)).isSameAs(held);
    } finally {
      held.unlock();
    }
    Thread.sleep(50);
    registry1.expireUnusedOlderThan(10);
    assertThat(registry1.obtain(key)).isNotSameAs(held);
  }

  @Test
  @DisplayName("a thread that died holding the lock: its lease is no longer renewed and runs out")
  void deadHolder() throws Exception {
    Thread holder = new Thread(() -> registry1.obtain(key).lock());
    holder.start();
    holder.join(30_000);
    assertThat(heldOnNodes()).isTrue();
    assertThat(registry2.obtain(key).tryLock(TTL.multipliedBy(3).toMillis(), TimeUnit.MILLISECONDS))
        .isTrue();
    registry2.obtain(key).unlock();
    assertThat(registry1.obtain(key).tryLock(5, TimeUnit.SECONDS))
        .as("this JVM's next thread takes over the dead holder's lock")
        .isTrue();
    registry1.obtain(key).unlock();
  }

  @Test
  @DisplayName("a held lock outlives its TTL: it is kept alive until unlocked")
  void keptAlive() throws Exception {
    Lock lock = registry1.obtain(key);
    lock.lock();
    try {
      Thread.sleep(TTL.multipliedBy(2).toMillis());
      assertThat(registry2.obtain(key).tryLock()).isFalse();
      assertThat(heldOnNodes()).isTrue();
    } finally {
      lock.unlock();
    }
    assertThat(registry2.obtain(key).tryLock()).isTrue();
    registry2.obtain(key).unlock();
  }

  @Test
  @DisplayName(
      "a lease lost while held: the holder's tryLock throws, the lock stays the holder's until its"
          + " unlock, which names the loss")
  void lostWhileHeld() throws Exception {
    RedlockRegistryLock lock = registry1.obtain(key);
    lock.lock();
    for (RedisServer server : redis) {
      server.command("DEL", "si:" + key);
    }
    // the keep-alive finds the token gone at its next renewal (every TTL/3)
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    boolean reentered = true;
    while (reentered && System.nanoTime() < deadline) {
      try {
        reentered = lock.tryLock();
        lock.unlock();
        Thread.sleep(50);
      } catch (LeaseLostException | IllegalMonitorStateException e) {
        reentered = false; // the reentry, or the inner unlock, found the lease lost
      }
    }
    assertThat(reentered).as("tryLock by the holder after the loss").isFalse();
    assertThat(lock.isLocked()).as("still the holder's until it unlocks").isTrue();
    assertThat(freeForAnotherThread(lock)).isFalse();
    assertThatThrownBy(lock::unlock)
        .isInstanceOf(IllegalMonitorStateException.class)
        .hasMessageContaining("lost while held")
        .hasCauseInstanceOf(LeaseLostException.class);
    assertThat(lock.isLocked()).isFalse();
    assertThat(lock.tryLock()).as("a fresh lease on the next call").isTrue();
    lock.unlock();
  }

  @Test
  @DisplayName("renewLock extends the holder's lease; it is refused to a thread that does not hold")
  void renew() {
    RedlockRegistryLock lock = registry1.obtain(key);
    assertThatThrownBy(() -> registry1.renewLock(key)).isInstanceOf(IllegalStateException.class);
    lock.lock();
    try {
      registry1.renewLock(key);
      assertThat(Long.parseLong(redis.get(0).command("PTTL", "si:" + key).replace(":", "")))
          .isGreaterThan(TTL.toMillis() - 500);
    } finally {
      lock.unlock();
    }
    assertThatThrownBy(() -> registry1.renewLock(key)).isInstanceOf(IllegalStateException.class);
  }

  @Test
  @DisplayName("executeLocked, LockRegistry's own helper, runs the task under the lock")
  void executeLocked() throws Exception {
    String result =
        registry1.executeLocked(
            key,
            () -> {
              assertThat(heldOnNodes()).isTrue();
              return "done";
            });
    assertThat(result).isEqualTo("done");
    assertThat(redis.get(0).command("GET", "si:" + key)).isNull();
  }

  @Test
  @DisplayName("each holder's fencing token is higher than the one before, across registries")
  void fencingTokens() {
    RedlockRegistryLock lock1 = registry1.obtain(key);
    RedlockRegistryLock lock2 = registry2.obtain(key);
    assertThat(lock1.fencingToken()).isEmpty();
    lock1.lock();
    long first = lock1.fencingToken().orElseThrow();
    assertThat(registry1.fencingToken(key)).hasValue(first);
    lock1.unlock();
    assertThat(lock1.fencingToken()).isEmpty();
    lock2.lock();
    long second = lock2.fencingToken().orElseThrow();
    lock2.unlock();
    assertThat(second).isGreaterThan(first);
  }

  @Test
  @DisplayName("conditions are not supported")
  void noConditions() {
    assertThatThrownBy(() -> registry1.obtain(key).newCondition())
        .isInstanceOf(UnsupportedOperationException.class);
  }
}
