package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLostException;
import io.redlock.LockTimeoutException;
import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code asLock}, the async calls, {@code acquireAll} and {@code resume}, on in-memory nodes. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("Lock, async, several resources and resume")
class LockAndAsyncTest {
  private static final Duration TTL = Duration.ofSeconds(2);
  private static final RedlockSettings SETTINGS =
      RedlockSettings.defaults()
          .withNodeTimeout(Duration.ofMillis(50))
          .withRetry(3, Duration.ofMillis(5), Duration.ofMillis(20));

  private static QuorumRedlock redlock(List<LiveNode> nodes) {
    return new QuorumRedlock(
        List.<LockNode>copyOf(nodes),
        SETTINGS,
        Ticker.system(),
        Sleeper.SYSTEM,
        new java.util.Random(1),
        false,
        io.redlock.RedlockListener.NONE);
  }

  private static QuorumRedlock redlock() {
    return redlock(LiveNode.nodes(3, LiveNode.newLog()));
  }

  @Nested
  @DisplayName("asLock")
  class AsLock {

    @Test
    @DisplayName("is reentrant per thread with a hold count, and released by the last unlock")
    void reentrant() {
      try (QuorumRedlock redlock = redlock()) {
        Lock lock = redlock.asLock("lock", TTL);
        lock.lock();
        assertThat(lock.tryLock()).isTrue();
        lock.lock();
        assertThat(redlock.tryAcquire("lock", TTL)).as("held elsewhere").isEmpty();
        lock.unlock();
        lock.unlock();
        assertThat(redlock.tryAcquire("lock", TTL)).as("still held once").isEmpty();
        lock.unlock();
        assertThat(redlock.tryAcquire("lock", TTL)).as("released by the last").isPresent();
      }
    }

    @Test
    @DisplayName("refuses unlock from a thread that does not hold it, and has no conditions")
    void notTheOwner() throws Exception {
      try (QuorumRedlock redlock = redlock()) {
        Lock lock = redlock.asLock("owner", TTL);
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
        lock.lock();
        CompletableFuture<Throwable> other = new CompletableFuture<>();
        Thread t =
            new Thread(
                () -> {
                  try {
                    lock.unlock();
                    other.complete(null);
                  } catch (Throwable e) {
                    other.complete(e);
                  }
                });
        t.start();
        assertThat(other.get(10, TimeUnit.SECONDS))
            .isInstanceOf(IllegalMonitorStateException.class)
            .hasMessageContaining("not held by this thread");
        assertThatThrownBy(lock::newCondition)
            .isInstanceOf(UnsupportedOperationException.class)
            .hasMessageContaining("no conditions");
        lock.unlock();
      }
    }

    @Test
    @DisplayName("excludes threads of this JVM from each other, and tryLock(time) gives up in time")
    void excludesThreads() throws Exception {
      try (QuorumRedlock redlock = redlock()) {
        Lock lock = redlock.asLock("threads", TTL);
        lock.lock();
        CompletableFuture<Boolean> tried = new CompletableFuture<>();
        Thread t =
            new Thread(
                () -> {
                  try {
                    tried.complete(lock.tryLock(100, TimeUnit.MILLISECONDS));
                  } catch (InterruptedException e) {
                    tried.completeExceptionally(e);
                  }
                });
        t.start();
        assertThat(tried.get(10, TimeUnit.SECONDS)).isFalse();

        CountDownLatch got = new CountDownLatch(1);
        Thread waiter =
            new Thread(
                () -> {
                  lock.lock();
                  got.countDown();
                  lock.unlock();
                });
        waiter.start();
        assertThat(got.await(200, TimeUnit.MILLISECONDS)).isFalse();
        lock.unlock();
        assertThat(got.await(10, TimeUnit.SECONDS)).isTrue();
        waiter.join(10_000);
      }
    }

    @Test
    @DisplayName("is kept alive while held, and an unlock after a loss says so")
    void lostWhileHeld() throws Exception {
      List<LiveNode> nodes = LiveNode.nodes(3, LiveNode.newLog());
      try (QuorumRedlock redlock = redlock(nodes)) {
        Lock lock = redlock.asLock("lost", Duration.ofMillis(600));
        lock.lock();
        Thread.sleep(1_000);
        assertThat(redlock.tryAcquire("lost", TTL)).as("kept alive past its TTL").isEmpty();
        nodes.get(0).down(true);
        nodes.get(1).down(true);
        Thread.sleep(1_000); // renewals fail until the lease is declared lost

        assertThatThrownBy(lock::unlock)
            .isInstanceOf(IllegalMonitorStateException.class)
            .hasMessageContaining("was lost while held");
        nodes.get(0).down(false);
        nodes.get(1).down(false);
        assertThat(lock.tryLock()).as("usable again").isTrue();
        lock.unlock();
      }
    }
  }

  @Nested
  @DisplayName("asLock after a loss, and across objects")
  class AsLockLoss {

    /** Waits (bounded) until the lease behind {@code resource}'s Lock is lost. */
    private void awaitLoss(QuorumRedlock redlock, String resource) throws InterruptedException {
      QuorumLease lease = redlock.lockHolders.get(resource).lease;
      for (int i = 0; i < 1_000 && lease.isValid(); i++) {
        Thread.sleep(10);
      }
      assertThat(lease.isValid()).as("lost within 10 s").isFalse();
    }

    private Boolean tryLockOnAnotherThread(Lock lock) throws Exception {
      CompletableFuture<Boolean> tried = new CompletableFuture<>();
      Thread t = new Thread(() -> tried.complete(lock.tryLock()));
      t.start();
      t.join(10_000);
      return tried.get(10, TimeUnit.SECONDS);
    }

    @Test
    @DisplayName(
        "a lost lock: reentry throws, no other thread is told locked before the unlock, which"
            + " throws")
    void noHeldAfterLoss() throws Exception {
      List<LiveNode> nodes = LiveNode.nodes(3, LiveNode.newLog());
      try (QuorumRedlock redlock = redlock(nodes)) {
        Lock lock = redlock.asLock("gone", Duration.ofMillis(600));
        lock.lock();
        nodes.get(0).down(true);
        nodes.get(1).down(true);
        awaitLoss(redlock, "gone");
        nodes.get(0).down(false);
        nodes.get(1).down(false);
        Thread.sleep(700); // the keys have expired: the nodes would grant it to anybody

        assertThatThrownBy(lock::tryLock).isInstanceOf(LeaseLostException.class);
        assertThatThrownBy(lock::lock).isInstanceOf(LeaseLostException.class);
        assertThat(tryLockOnAnotherThread(lock)).as("another thread, before the unlock").isFalse();
        assertThat(tryLockOnAnotherThread(redlock.asLock("gone", TTL))).isFalse();

        assertThatThrownBy(lock::unlock)
            .isInstanceOf(IllegalMonitorStateException.class)
            .hasMessageContaining("was lost while held")
            .hasCauseInstanceOf(LeaseLostException.class);
        assertThatThrownBy(lock::unlock).hasMessageContaining("not held by this thread");
        assertThat(tryLockOnAnotherThread(lock)).as("after the unlock").isTrue();
      }
    }

    @Test
    @DisplayName("two Lock objects for one resource share the holder and its hold count")
    void sharedAcrossObjects() throws Exception {
      try (QuorumRedlock redlock = redlock()) {
        Lock a = redlock.asLock("shared", TTL);
        Lock b = redlock.asLock("shared", TTL);
        a.lock();
        assertThat(b.tryLock()).as("reentrant through the other object").isTrue();
        b.unlock();
        assertThat(tryLockOnAnotherThread(b)).as("still held once").isFalse();
        a.unlock();
        assertThat(redlock.lockHolders).as("nothing kept for a free resource").isEmpty();
        assertThat(tryLockOnAnotherThread(b)).isTrue();
      }
    }

    @Test
    @DisplayName("a holder thread that ends without unlocking gives the lock up to waiters")
    void deadHolder() throws Exception {
      try (QuorumRedlock redlock = redlock()) {
        Lock lock = redlock.asLock("orphan", TTL);
        Thread t = new Thread(lock::lock);
        t.start();
        t.join(10_000);
        assertThat(lock.tryLock(10, TimeUnit.SECONDS)).isTrue();
        lock.unlock();
      }
    }
  }

  @Nested
  @DisplayName("keep-alive options")
  class KeepAliveOptions {
    @Test
    @DisplayName("a period or margin not shorter than the TTL is refused, naming the fix")
    void refused() {
      try (QuorumRedlock redlock = redlock()) {
        Lease lease = redlock.tryAcquire("ka", TTL).orElseThrow();
        assertThatThrownBy(() -> lease.keepAlive(KeepAlive.defaults().every(TTL)))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("must be shorter than the lease's TTL");
        assertThatThrownBy(() -> lease.keepAlive(KeepAlive.defaults().lostMargin(TTL)))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("lostMargin");
        assertThat(lease.isValid()).as("the lease is unharmed").isTrue();
        lease.release();
      }
    }

    @Test
    @DisplayName("a period near the TTL still extends before the validity reaches the margin")
    void extendsInTime() throws Exception {
      try (QuorumRedlock redlock = redlock()) {
        Duration ttl = Duration.ofMillis(600);
        Lease lease =
            redlock
                .tryAcquire("near", ttl)
                .orElseThrow()
                .keepAlive(KeepAlive.defaults().every(Duration.ofMillis(590)));
        Thread.sleep(1_500);
        assertThat(lease.isValid()).as("kept alive past its TTL").isTrue();
        lease.release();
      }
    }
  }

  @Nested
  @DisplayName("async")
  class Async {

    @Test
    @DisplayName("acquireAsync waits for a release without a thread, and fails in time")
    void acquireAsync() throws Exception {
      try (QuorumRedlock redlock = redlock()) {
        Lease held = redlock.tryAcquire("async", TTL).orElseThrow();
        CompletableFuture<Lease> waiting =
            redlock.acquireAsync("async", TTL, Duration.ofSeconds(10));
        Thread.sleep(100);
        assertThat(waiting).isNotDone();
        held.releaseAsync().get(10, TimeUnit.SECONDS);
        Lease got = waiting.get(10, TimeUnit.SECONDS);
        assertThat(got.isValid()).isTrue();
        assertThat(got.extendAsync(TTL).get(10, TimeUnit.SECONDS)).isTrue();

        assertThatThrownBy(
                () ->
                    redlock
                        .acquireAsync("async", TTL, Duration.ofMillis(100))
                        .get(10, TimeUnit.SECONDS))
            .isInstanceOf(ExecutionException.class)
            .hasCauseInstanceOf(LockTimeoutException.class);
        assertThat(redlock.tryAcquireAsync("async", TTL).get(10, TimeUnit.SECONDS)).isEmpty();
        got.release();
        Optional<Lease> free = redlock.tryAcquireAsync("async", TTL).get(10, TimeUnit.SECONDS);
        assertThat(free).isPresent();
      }
    }

    @Test
    @DisplayName(
        "10,000 acquisitions waiting on one resource at once hold a bounded number of threads")
    void tenThousandWaiters() throws Exception {
      RedlockSettings slowPolling =
          SETTINGS.withRetry(3, Duration.ofMillis(500), Duration.ofMillis(1_000));
      try (QuorumRedlock redlock =
          new QuorumRedlock(
              List.<LockNode>copyOf(LiveNode.nodes(3, LiveNode.newLog())),
              slowPolling,
              Ticker.system(),
              Sleeper.SYSTEM,
              new java.util.Random(1),
              false,
              io.redlock.RedlockListener.NONE)) {
        Lease held = redlock.tryAcquire("crowd", Duration.ofSeconds(60)).orElseThrow();
        int before = ManagementFactory.getThreadMXBean().getThreadCount();
        List<CompletableFuture<Lease>> waiting = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {
          waiting.add(redlock.acquireAsync("crowd", Duration.ofSeconds(60), Duration.ofSeconds(3)));
        }
        Thread.sleep(1_000);
        int during = ManagementFactory.getThreadMXBean().getThreadCount();
        long pending = waiting.stream().filter(f -> !f.isDone()).count();
        System.out.printf(
            "10,000 waiting acquisitions: %d still waiting after 1 s; threads %d before, %d"
                + " during%n",
            pending, before, during);
        assertThat(pending).isGreaterThan(9_000);
        assertThat(during - before)
            .isLessThanOrEqualTo(Runtime.getRuntime().availableProcessors() + 4);
        held.release();
        AtomicInteger granted = new AtomicInteger();
        for (CompletableFuture<Lease> f : waiting) {
          try {
            f.get(30, TimeUnit.SECONDS).release();
            granted.incrementAndGet();
          } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(LockTimeoutException.class);
          }
        }
        assertThat(granted.get()).as("some of them got the lock after the release").isPositive();
      }
    }
  }

  @Nested
  @DisplayName("acquireAll")
  class AcquireAll {

    @Test
    @DisplayName("locks all or none, and its validity is the shortest part's")
    void allOrNothing() throws Exception {
      try (QuorumRedlock redlock = redlock()) {
        Lease b = redlock.tryAcquire("b", TTL).orElseThrow();
        assertThatThrownBy(() -> redlock.acquireAll(Set.of("a", "b", "c"), TTL, Duration.ZERO))
            .isInstanceOf(LockTimeoutException.class);
        assertThat(redlock.tryAcquire("a", TTL)).as("a was released again").isPresent();
        b.release();

        Lease all = redlock.acquireAll(Set.of("x", "y", "z"), TTL, Duration.ofSeconds(5));
        assertThat(all.resource()).isEqualTo("x,y,z");
        assertThat(all.remainingValidity()).isLessThanOrEqualTo(TTL);
        assertThat(redlock.tryAcquire("y", TTL)).isEmpty();
        all.release();
        assertThat(redlock.tryAcquire("y", TTL)).isPresent();
      }
    }

    @Test
    @DisplayName("two callers locking overlapping sets in different orders never deadlock")
    void noDeadlock() throws Exception {
      try (QuorumRedlock redlock = redlock()) {
        AtomicInteger done = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (List<String> set : List.of(List.of("p", "q", "r"), List.of("r", "q", "p"))) {
          Thread t =
              new Thread(
                  () -> {
                    for (int i = 0; i < 20; i++) {
                      try {
                        redlock.acquireAll(set, TTL, Duration.ofSeconds(20)).release();
                        done.incrementAndGet();
                      } catch (InterruptedException e) {
                        return;
                      }
                    }
                  });
          t.start();
          threads.add(t);
        }
        for (Thread t : threads) {
          t.join(60_000);
        }
        assertThat(done.get()).isEqualTo(40);
      }
    }
  }

  @Nested
  @DisplayName("resume")
  class Resume {

    @Test
    @DisplayName("another client takes a lease over by its token, extends and releases it")
    void takesOver() {
      List<LiveNode> nodes = LiveNode.nodes(3, LiveNode.newLog());
      try (QuorumRedlock first = redlock(nodes)) {
        Lease lease = first.tryAcquire("handed", TTL).orElseThrow();
        QuorumRedlock second =
            new QuorumRedlock(
                nodes.stream().map(n -> (LockNode) new Shared(n)).toList(),
                SETTINGS,
                Ticker.system(),
                Sleeper.SYSTEM,
                new java.util.Random(2),
                false,
                io.redlock.RedlockListener.NONE);
        Lease resumed = second.resume("handed", lease.token(), Duration.ofSeconds(5));
        assertThat(resumed.isValid()).isTrue();
        assertThat(resumed.remainingValidity()).isGreaterThan(TTL);
        assertThatThrownBy(resumed::fencingToken).hasMessageContaining("resume()");
        assertThat(resumed.release().deleted()).isEqualTo(3);
        assertThat(first.tryAcquire("handed", TTL)).isPresent();

        assertThatThrownBy(() -> second.resume("handed", lease.token(), TTL))
            .isInstanceOf(LeaseLostException.class)
            .hasMessageContaining("too few nodes still hold this token");
      }
    }
  }

  /** A node sharing another's store, without closing it (a second client of the same store). */
  private static final class Shared extends WrappingNode {
    Shared(LiveNode node) {
      super(node.store);
    }

    @Override
    <T> io.redlock.spi.Reply<T> wrap(java.util.function.Supplier<io.redlock.spi.Reply<T>> call) {
      return call.get();
    }

    @Override
    public void close() {}
  }
}
