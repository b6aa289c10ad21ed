package io.redlock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Redlock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockExtender;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * ShedLock's documented {@code LockProvider} and {@code ExtensibleLockProvider} behaviour, point by
 * point (ShedLock's own test support is not published for its recent versions). Every test runs two
 * providers, each on its own Redlock over the same nodes, as two application instances would; a
 * subclass names the nodes.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
abstract class LockProviderContract {
  /** Long enough never to expire during a test that does not wait for it. */
  static final Duration LONG = Duration.ofMinutes(5);

  /** Slack for scheduling on a busy 2-core machine, after a deadline. */
  static final Duration SLACK = Duration.ofMillis(300);

  /**
   * How long the timed tests hold: a check that the lock is still held comes halfway, so that a
   * check slowed down by a loaded machine still asks the nodes long before the deadline.
   */
  static final Duration HOLD = Duration.ofSeconds(3);

  private Redlock redlockA;
  private Redlock redlockB;

  /** Instance A's provider. */
  RedlockLockProvider a;

  /** Instance B's provider, over the same nodes. */
  RedlockLockProvider b;

  /** A fresh lock name per test. */
  String name;

  /** The node URIs of the quorum under test. */
  abstract List<String> nodeUris();

  @BeforeEach
  void createProviders() {
    redlockA = redlock();
    redlockB = redlock();
    a = new RedlockLockProvider(redlockA);
    b = new RedlockLockProvider(redlockB);
    name = "task-" + UUID.randomUUID();
  }

  @AfterEach
  void closeRedlocks() {
    if (redlockA != null) {
      redlockA.close();
    }
    if (redlockB != null) {
      redlockB.close();
    }
  }

  Redlock redlock() {
    return Redlock.builder()
        .nodeUris(nodeUris())
        // generous for a busy 2-core machine; the default (TTL/50) suits real networks
        .nodeTimeout(Duration.ofMillis(500))
        .retry(3, Duration.ofMillis(5), Duration.ofMillis(30))
        .build();
  }

  static LockConfiguration config(String name, Duration atMost, Duration atLeast) {
    return new LockConfiguration(ClockProvider.now(), name, atMost, atLeast);
  }

  static LockConfiguration config(String name) {
    return config(name, LONG, Duration.ZERO);
  }

  /** Instance B cannot have the lock now. */
  void assertLocked() {
    assertThat(b.lock(config(name))).as("B can take '%s'", name).isEmpty();
  }

  /** Instance B can have the lock now; it gives it back at once. */
  void assertUnlocked() {
    Optional<SimpleLock> lock = b.lock(config(name));
    assertThat(lock).as("B can take '%s'", name).isPresent();
    lock.get().unlock();
  }

  static void sleep(Duration d) throws InterruptedException {
    Thread.sleep(Math.max(0, d.toMillis())); // a loaded machine may already be past it
  }

  @Test
  @DisplayName("a lock is exclusive: held by one instance, the other gets nothing")
  void exclusive() {
    Optional<SimpleLock> lock = a.lock(config(name));
    assertThat(lock).isPresent();
    assertLocked();
    assertThat(a.lock(config(name))).as("not even the holder's own provider").isEmpty();
    lock.get().unlock();
  }

  @Test
  @DisplayName("it is released at the end: unlocked, it can be taken again at once, ten times")
  void releasedAtTheEnd() {
    for (int i = 0; i < 10; i++) {
      Optional<SimpleLock> lock = a.lock(config(name));
      assertThat(lock).isPresent();
      assertThat(b.lock(config(name))).isEmpty();
      lock.get().unlock();
      assertUnlocked();
    }
  }

  @Test
  @DisplayName("locks of different names are independent")
  void independentNames() {
    Optional<SimpleLock> first = a.lock(config(name));
    Optional<SimpleLock> second = b.lock(config(name + "-2"));
    assertThat(first).isPresent();
    assertThat(second).isPresent();
    first.get().unlock();
    second.get().unlock();
  }

  @Test
  @DisplayName("it expires at lockAtMostFor when never unlocked, and not before")
  void expiresAtLockAtMostFor() throws Exception {
    Duration atMost = HOLD;
    long start = System.nanoTime();
    assertThat(a.lock(config(name, atMost, Duration.ZERO))).isPresent();
    sleep(atMost.dividedBy(2).minusNanos(System.nanoTime() - start));
    assertLocked();
    sleep(atMost.plus(SLACK).minusNanos(System.nanoTime() - start));
    assertUnlocked();
  }

  @Test
  @DisplayName("unlocked before lockAtLeastFor, it stays held until lockAtLeastFor, then frees")
  void heldForLockAtLeastFor() throws Exception {
    Duration atLeast = HOLD;
    long start = System.nanoTime();
    Optional<SimpleLock> lock = a.lock(config(name, LONG, atLeast));
    assertThat(lock).isPresent();
    lock.get().unlock();
    assertLocked();
    sleep(atLeast.dividedBy(2).minusNanos(System.nanoTime() - start));
    assertLocked();
    sleep(atLeast.plus(SLACK).minusNanos(System.nanoTime() - start));
    assertUnlocked(); // at lockAtLeastFor, long before lockAtMostFor
  }

  @Test
  @DisplayName("unlocked after lockAtLeastFor has passed, it is released at once")
  void releasedAfterLockAtLeastFor() throws Exception {
    Optional<SimpleLock> lock = a.lock(config(name, LONG, Duration.ofMillis(200)));
    assertThat(lock).isPresent();
    sleep(Duration.ofMillis(300));
    lock.get().unlock();
    assertUnlocked();
  }

  @Test
  @DisplayName("a lock cannot be unlocked twice")
  void unlockTwice() {
    SimpleLock lock = a.lock(config(name)).orElseThrow();
    lock.unlock();
    assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class);
  }

  @Test
  @DisplayName("extension: an extended lock outlives its first lockAtMostFor, then unlocks")
  void extend() throws Exception {
    Duration first = Duration.ofMillis(1_000);
    SimpleLock lock = a.lock(config(name, first, Duration.ZERO)).orElseThrow();
    Optional<SimpleLock> extended = lock.extend(Duration.ofSeconds(10), Duration.ZERO);
    assertThat(extended).isPresent();
    sleep(first.plus(SLACK));
    assertLocked();
    extended.get().unlock();
    assertUnlocked();
  }

  @Test
  @DisplayName("extension: lockAtLeastFor of the extension is honoured at unlock")
  void extendWithLockAtLeastFor() throws Exception {
    SimpleLock lock = a.lock(config(name, Duration.ofSeconds(10), Duration.ZERO)).orElseThrow();
    long start = System.nanoTime();
    SimpleLock extended = lock.extend(Duration.ofSeconds(10), HOLD).orElseThrow();
    extended.unlock();
    assertLocked();
    sleep(HOLD.plus(SLACK).minusNanos(System.nanoTime() - start));
    assertUnlocked();
  }

  @Test
  @DisplayName("extension: after extend, the old lock can be neither extended nor unlocked")
  void oldLockInvalidAfterExtend() {
    SimpleLock lock = a.lock(config(name, Duration.ofSeconds(10), Duration.ZERO)).orElseThrow();
    SimpleLock extended = lock.extend(Duration.ofSeconds(10), Duration.ZERO).orElseThrow();
    assertThatThrownBy(() -> lock.extend(Duration.ofSeconds(10), Duration.ZERO))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class);
    assertLocked();
    extended.unlock();
    assertUnlocked();
  }

  @Test
  @DisplayName("extension: an unlocked lock cannot be extended")
  void extendUnlocked() {
    SimpleLock lock = a.lock(config(name)).orElseThrow();
    lock.unlock();
    assertThatThrownBy(() -> lock.extend(Duration.ofSeconds(10), Duration.ZERO))
        .isInstanceOf(IllegalStateException.class);
    assertUnlocked();
  }

  @Test
  @DisplayName("extension: an expired lock cannot be extended, and stays free")
  void extendExpired() throws Exception {
    SimpleLock lock = a.lock(config(name, Duration.ofMillis(300), Duration.ZERO)).orElseThrow();
    sleep(Duration.ofMillis(300).plus(SLACK));
    assertThat(lock.extend(Duration.ofSeconds(10), Duration.ZERO)).isEmpty();
    assertUnlocked();
  }

  @Test
  @DisplayName("extension: ShedLock's LockExtender extends the active lock of a running task")
  void lockExtender() throws Throwable {
    LockingTaskExecutor executor = new DefaultLockingTaskExecutor(a);
    Duration atMost = Duration.ofMillis(800);
    LockingTaskExecutor.TaskResult<Boolean> result =
        executor.executeWithLock(
            () -> {
              LockAssert.assertLocked();
              LockExtender.extendActiveLock(Duration.ofSeconds(10), Duration.ZERO);
              sleep(atMost.plus(SLACK));
              return b.lock(config(name)).isEmpty(); // still held past the first lockAtMostFor
            },
            config(name, atMost, Duration.ZERO));
    assertThat(result.wasExecuted()).isTrue();
    assertThat(result.getResult()).isTrue();
    assertUnlocked();
  }

  @Test
  @DisplayName("LockingTaskExecutor skips a task whose lock another instance holds")
  void executorSkipsWhenHeld() throws Throwable {
    SimpleLock held = b.lock(config(name)).orElseThrow();
    AtomicInteger runs = new AtomicInteger();
    LockingTaskExecutor.TaskResult<Integer> result =
        new DefaultLockingTaskExecutor(a)
            .executeWithLock(
                (LockingTaskExecutor.TaskWithResult<Integer>) runs::incrementAndGet, config(name));
    assertThat(result.wasExecuted()).isFalse();
    assertThat(runs).hasValue(0);
    held.unlock();
  }

  @Test
  @DisplayName("a lockAtMostFor under the drift allowance is refused with a reason")
  void tooShort() {
    assertThatThrownBy(() -> a.lock(config(name, Duration.ofMillis(1), Duration.ZERO)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(name)
        .hasMessageContaining("lockAtMostFor");
  }

  @Test
  @DisplayName(
      "fuzz: 4 threads on 2 instances increment an unsynchronised counter; no run overlaps"
          + " another, and none is lost")
  void fuzz() throws Exception {
    int threads = 4;
    int iterations = 25;
    int[] counter = {0};
    AtomicInteger executed = new AtomicInteger();
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger mostInside = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        LockingTaskExecutor executor = new DefaultLockingTaskExecutor(t % 2 == 0 ? a : b);
        futures.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < iterations; i++) {
                    executor.executeWithLock(
                        (Runnable)
                            () -> {
                              mostInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                              int read = counter[0];
                              Thread.yield();
                              counter[0] = read + 1;
                              executed.incrementAndGet();
                              inside.decrementAndGet();
                            },
                        config(name, Duration.ofSeconds(10), Duration.ZERO));
                  }
                  return null;
                }));
      }
      for (Future<?> f : futures) {
        f.get(90, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(mostInside).as("runs inside the lock at once").hasValue(1);
    assertThat(executed.get()).isPositive();
    synchronized (counter) {
      assertThat(counter[0]).isEqualTo(executed.get());
    }
  }
}
