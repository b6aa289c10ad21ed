package io.redlock.jdbc.internal;

import static io.redlock.jdbc.internal.Waits.awaitInTask;
import static io.redlock.jdbc.internal.Waits.within;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The JDBC node's worker pool: the last idle worker first, a bounded backlog, clean ends. */
class LifoExecutorTest {
  private static final ThreadFactory DAEMONS =
      r -> {
        Thread t = new Thread(r, "lifo-test");
        t.setDaemon(true);
        return t;
      };

  private LifoExecutor pool;

  @AfterEach
  void stop() throws InterruptedException {
    if (pool != null) {
      pool.shutdownNow();
      assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    }
  }

  /** Runs a task (which may throw) and waits for it; returns the thread that ran it. */
  private Thread runAndWait(Runnable extra) throws InterruptedException {
    Thread[] ran = new Thread[1];
    CountDownLatch done = new CountDownLatch(1);
    pool.execute(
        () -> {
          ran[0] = Thread.currentThread();
          try {
            extra.run();
          } finally {
            done.countDown();
          }
        });
    assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
    return ran[0];
  }

  @Test
  @DisplayName("calls one after another all go to the worker that went idle last")
  void lastIdleFirst() throws Exception {
    pool = new LifoExecutor(4, 100, 1, TimeUnit.MINUTES, DAEMONS);
    // four workers, busy at once, then all idle
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(4);
    for (int i = 0; i < 4; i++) {
      pool.execute(
          () -> {
            started.countDown();
            awaitInTask(release);
          });
    }
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    release.countDown();
    assertThat(within(Duration.ofSeconds(10), () -> pool.idleThreads() == 4)).isTrue();
    Set<Thread> used = new HashSet<>();
    for (int i = 0; i < 50; i++) {
      Thread t = runAndWait(() -> {});
      // the worker goes idle again just after the call: wait for it, as the next call would
      assertThat(within(Duration.ofSeconds(10), () -> pool.idleThreads() == 4)).isTrue();
      used.add(t);
    }
    assertThat(used).hasSize(1); // a ThreadPoolExecutor goes round all four
    assertThat(pool.threads()).isEqualTo(4);
  }

  @Test
  @DisplayName("calls beyond the workers wait in order, and one beyond the backlog is refused")
  void backlog() throws Exception {
    pool = new LifoExecutor(1, 3, 1, TimeUnit.MINUTES, DAEMONS);
    CountDownLatch release = new CountDownLatch(1);
    StringBuffer order = new StringBuffer();
    CountDownLatch all = new CountDownLatch(4);
    for (int i = 0; i < 4; i++) {
      int n = i;
      pool.execute(
          () -> {
            awaitInTask(release);
            order.append(n);
            all.countDown();
          });
    }
    assertThat(pool.threads()).isEqualTo(1);
    assertThatThrownBy(() -> pool.execute(() -> {}))
        .isInstanceOf(RejectedExecutionException.class)
        .hasMessageContaining("all 1 worker thread(s) are busy")
        .hasMessageContaining("3 call(s) wait");
    release.countDown();
    assertThat(all.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(order).hasToString("0123"); // the queued ones in the order they came
  }

  @Test
  @DisplayName("idle workers end after the keep-alive, and new calls start new ones")
  void keepAlive() throws Exception {
    pool = new LifoExecutor(3, 10, 50, TimeUnit.MILLISECONDS, DAEMONS);
    Thread first = runAndWait(() -> {});
    assertThat(within(Duration.ofSeconds(10), () -> pool.threads() == 0)).isTrue();
    assertThat(within(Duration.ofSeconds(10), () -> !first.isAlive())).isTrue();
    assertThat(runAndWait(() -> {})).isNotSameAs(first);
  }

  @Test
  @DisplayName("shutdown refuses new calls, lets queued ones run, and the workers end")
  void shutdown() throws Exception {
    pool = new LifoExecutor(1, 10, 1, TimeUnit.MINUTES, DAEMONS);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger ran = new AtomicInteger();
    for (int i = 0; i < 3; i++) {
      pool.execute(
          () -> {
            awaitInTask(release);
            ran.incrementAndGet();
          });
    }
    pool.shutdown();
    assertThatThrownBy(() -> pool.execute(() -> {}))
        .isInstanceOf(RejectedExecutionException.class)
        .hasMessageContaining("shut down");
    release.countDown();
    assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    assertThat(ran).hasValue(3);
    assertThat(pool.threads()).isZero();
  }

  @Test
  @DisplayName("shutdownNow interrupts running calls, drops queued ones, and idle workers end")
  void shutdownNow() throws Exception {
    pool = new LifoExecutor(2, 10, 1, TimeUnit.MINUTES, DAEMONS);
    runAndWait(() -> {}); // one idle worker
    CountDownLatch started = new CountDownLatch(1);
    AtomicInteger interrupted = new AtomicInteger();
    AtomicInteger queuedRan = new AtomicInteger();
    pool.execute(
        () -> {
          started.countDown();
          try {
            Thread.sleep(30_000);
          } catch (InterruptedException e) {
            interrupted.incrementAndGet();
          }
        });
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    CountDownLatch block = new CountDownLatch(1);
    pool.execute(
        () -> {
          try {
            block.await(30, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            interrupted.incrementAndGet();
          }
        });
    pool.execute(queuedRan::incrementAndGet); // both workers busy: this one waits
    pool.shutdownNow();
    assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    assertThat(interrupted).hasValue(2);
    assertThat(queuedRan).hasValue(0);
  }

  @Test
  @DisplayName("shutdown wakes idle workers, which end")
  void shutdownEndsIdleWorkers() throws Exception {
    pool = new LifoExecutor(2, 10, 1, TimeUnit.MINUTES, DAEMONS);
    Thread worker = runAndWait(() -> {});
    assertThat(within(Duration.ofSeconds(10), () -> pool.idleThreads() == 1)).isTrue();
    pool.shutdown();
    assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    assertThat(pool.threads()).isZero();
    worker.join(10_000);
    assertThat(worker.isAlive()).isFalse();
  }

  @Test
  @DisplayName("an interrupt left by one call does not reach the next")
  void interruptDoesNotLeak() throws Exception {
    pool = new LifoExecutor(1, 10, 1, TimeUnit.MINUTES, DAEMONS);
    AtomicBoolean go = new AtomicBoolean();
    pool.execute(
        () -> {
          Thread.currentThread().interrupt();
          long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
          while (!go.get() && System.nanoTime() < end) {
            Thread.onSpinWait(); // busy, with the flag set, while the next call queues up
          }
        });
    boolean[] seen = {true};
    CountDownLatch done = new CountDownLatch(1);
    pool.execute( // queued: the one worker takes it straight from the backlog, without waiting
        () -> {
          seen[0] = Thread.currentThread().isInterrupted();
          done.countDown();
        });
    go.set(true);
    assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(seen[0]).isFalse();
  }

  @Test
  @DisplayName("an idle worker parks even when the call before left an interrupt")
  void idleWorkerParks() throws Exception {
    pool = new LifoExecutor(1, 10, 1, TimeUnit.MINUTES, DAEMONS);
    Thread worker = runAndWait(() -> Thread.currentThread().interrupt());
    // a worker whose park returned at once, over and over, would never be seen waiting five
    // times in a row
    int[] waiting = {0};
    assertThat(
            within(
                Duration.ofSeconds(10),
                () -> {
                  waiting[0] = worker.getState() == Thread.State.TIMED_WAITING ? waiting[0] + 1 : 0;
                  return waiting[0] >= 5;
                }))
        .isTrue();
  }

  @Test
  @DisplayName("a call that throws, even an Error, and a failing handler leave the worker working")
  void failuresDoNotEndWorkers() throws Exception {
    ThreadFactory throwingHandler =
        r -> {
          Thread t = DAEMONS.newThread(r);
          t.setUncaughtExceptionHandler(
              (thread, e) -> {
                throw new IllegalStateException("handler failed");
              });
          return t;
        };
    pool = new LifoExecutor(1, 10, 1, TimeUnit.MINUTES, throwingHandler);
    Thread first =
        runAndWait(
            () -> {
              throw new AssertionError("an Error from a call");
            });
    Thread second = runAndWait(() -> {});
    assertThat(second).isSameAs(first);
    assertThat(pool.threads()).isEqualTo(1);
  }

  @Test
  @DisplayName("a thread factory that makes no thread gets a refusal")
  void factoryWithoutThread() {
    pool = new LifoExecutor(1, 10, 1, TimeUnit.MINUTES, r -> null);
    assertThatThrownBy(() -> pool.execute(() -> {}))
        .isInstanceOf(RejectedExecutionException.class)
        .hasMessageContaining("no worker thread");
    assertThat(pool.threads()).isZero();
  }

  @Test
  @DisplayName("under many submitters and workers that come and go, every call runs exactly once")
  void stress() throws Exception {
    pool = new LifoExecutor(3, 100_000, 1, TimeUnit.MILLISECONDS, DAEMONS);
    int submitters = 4;
    int each = 5_000;
    ConcurrentHashMap<Integer, AtomicInteger> runs = new ConcurrentHashMap<>();
    CountDownLatch all = new CountDownLatch(submitters * each);
    Thread[] threads = new Thread[submitters];
    for (int s = 0; s < submitters; s++) {
      int base = s * each;
      threads[s] =
          new Thread(
              () -> {
                for (int i = 0; i < each; i++) {
                  int id = base + i;
                  pool.execute(
                      () -> {
                        runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
                        all.countDown();
                      });
                  if (i % 500 == 0) {
                    try {
                      Thread.sleep(2); // let workers go idle and time out now and then
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                      return;
                    }
                  }
                }
              });
      threads[s].start();
    }
    for (Thread t : threads) {
      t.join(30_000);
    }
    assertThat(all.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(runs).hasSize(submitters * each);
    assertThat(runs.values()).allMatch(n -> n.get() == 1);
    assertThat(within(Duration.ofSeconds(10), () -> pool.threads() == 0)).isTrue();
  }
}
