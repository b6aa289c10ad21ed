package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.Reply;
import io.redlock.spi.support.Replies;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The engine over nodes that answer on other threads through {@link Reply#supplyAsync}, on the
 * system clock: the path a blocking backend (JDBC) takes. Timing is only used with wide margins.
 */
@DisplayName("The engine over asynchronous nodes on real threads")
class AsynchronousBackendTest {
  private static final String KEY = "async-key";
  private final ExecutorService executor = Executors.newCachedThreadPool();

  @AfterEach
  void stop() throws InterruptedException {
    executor.shutdownNow();
    executor.awaitTermination(10, TimeUnit.SECONDS);
  }

  @Test
  void releases_a_late_acquired_that_arrives_after_the_attempt_failed() throws Exception {
    List<DelayedNode> nodes = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      // a majority answers 400 ms late, far past the 50 ms node timeout
      nodes.add(new DelayedNode("async-" + i, i < 3 ? 400 : 0));
    }
    RedlockSettings settings =
        RedlockSettings.defaults()
            .withNodeTimeout(Duration.ofMillis(50))
            .withRetry(1, Duration.ZERO, Duration.ZERO);
    QuorumRedlock redlock =
        new QuorumRedlock(List.<LockNode>copyOf(nodes), settings, Ticker.system());

    long started = System.nanoTime();
    Optional<Lease> lease = redlock.tryAcquire(KEY, Duration.ofSeconds(60));
    long tookMillis = (System.nanoTime() - started) / 1_000_000;

    assertThat(lease).isEmpty();
    assertThat(tookMillis).as("bounded by the node timeout, not the slow nodes").isLessThan(5_000);
    // wait (bounded) until the late requests that went out have landed and answered (one that no
    // worker had started when the engine gave up on it, on a loaded machine, is dropped unsent)
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (nodes.stream().anyMatch(n -> n.completedAcquires.get() < n.startedAcquires.get())
        && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(nodes).allSatisfy(n -> assertThat(n.completedAcquires.get()).isLessThanOrEqualTo(1));
    assertThat(nodes)
        .allSatisfy(n -> assertThat(n.completedAcquires.get()).isEqualTo(n.startedAcquires.get()));
    // the late "acquired" answers release their keys; with a 60 s TTL only the engine can
    while (nodes.stream().anyMatch(n -> n.store.owner(KEY).isPresent())
        && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(nodes).allSatisfy(n -> assertThat(n.store.owner(KEY)).isEmpty());
  }

  @Test
  void acquires_and_releases_through_futures() {
    List<DelayedNode> nodes = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      nodes.add(new DelayedNode("async-" + i, 0));
    }
    RedlockSettings settings = RedlockSettings.defaults().withNodeTimeout(Duration.ofSeconds(5));
    QuorumRedlock redlock =
        new QuorumRedlock(List.<LockNode>copyOf(nodes), settings, Ticker.system());

    Lease lease = redlock.tryAcquire(KEY, Duration.ofSeconds(60)).orElseThrow();

    assertThat(nodes).allSatisfy(n -> assertThat(n.store.owner(KEY)).contains(lease.token()));
    assertThat(lease.extend(Duration.ofSeconds(30))).isTrue();
    assertThat(lease.release().deleted()).isEqualTo(3);
    assertThat(nodes).allSatisfy(n -> assertThat(n.store.owner(KEY)).isEmpty());
  }

  /** An in-memory node whose calls run on an executor, acquires after a delay. */
  private final class DelayedNode implements LockNode {
    final InMemoryLockNode store;
    final AtomicInteger startedAcquires = new AtomicInteger();
    final AtomicInteger completedAcquires = new AtomicInteger();
    private final long acquireDelayMillis;

    DelayedNode(String name, long acquireDelayMillis) {
      this.store = new InMemoryLockNode(name);
      this.acquireDelayMillis = acquireDelayMillis;
    }

    @Override
    public String name() {
      return store.name();
    }

    @Override
    public NodeCapabilities capabilities() {
      // The plain calls only: this decorator does not pass fencing or status on.
      return new NodeCapabilities(store.capabilities().ttlPrecision());
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      return async(
          () -> {
            startedAcquires.incrementAndGet();
            sleep(acquireDelayMillis);
            AcquireResult result = store.tryAcquire(key, token, ttl).await(Duration.ZERO);
            completedAcquires.incrementAndGet();
            return result;
          });
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return async(() -> store.release(key, token).await(Duration.ZERO));
    }

    @Override
    public Reply<Boolean> extend(String key, String token, Duration ttl) {
      return async(() -> store.extend(key, token, ttl).await(Duration.ZERO));
    }

    private <T> Reply<T> async(Supplier<T> operation) {
      return Replies.supplyAsync(operation, executor, name());
    }

    private void sleep(long millis) {
      try {
        Thread.sleep(millis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    @Override
    public void close() {
      store.close();
    }
  }
}
