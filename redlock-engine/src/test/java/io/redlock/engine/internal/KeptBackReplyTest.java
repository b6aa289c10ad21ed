package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.NodeTimeoutException;
import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.Reply;
import io.redlock.spi.support.Replies;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The engine's fan-out keeps back the first call that a blocking backend holds for the awaiting
 * thread, to run it itself, and sends the others (see {@link Reply#send}). Whatever comes first
 * must start it instead, so that it never starts later than a sent call would have: in each case
 * here a healthy node lost its vote, or a release never ran, when it did not.
 */
@DisplayName("A call the engine's fan-out keeps back")
class KeptBackReplyTest {
  private static final Executor NEVER = task -> {}; // a worker pool busy with other callers
  private final ExecutorService worker = Executors.newSingleThreadExecutor();

  @AfterEach
  void stop() {
    worker.shutdownNow();
  }

  /** A blocking-backend-like node: every call goes through Replies.supplyAsyncOrInline. */
  static class StealNode implements LockNode {
    final InMemoryLockNode store;
    final Executor executor;

    /** Inline is refused while the call is being made, allowed when it is awaited. */
    final boolean refuseWhileCreating;

    volatile boolean creating;
    volatile boolean stallInline; // an inline run waits out its whole budget
    final boolean hideRunsOnAwait; // a decorator that forwards send but not runsOnAwait
    volatile boolean refuseAfterCreating; // inline allowed when made, refused when awaited

    StealNode(String name, Executor executor, boolean refuseWhileCreating, boolean hide) {
      this.store = new InMemoryLockNode(name, Ticker.system());
      this.executor = executor;
      this.refuseWhileCreating = refuseWhileCreating;
      this.hideRunsOnAwait = hide;
    }

    <T> Reply<T> call(Replies.Budgeted<T> op) {
      creating = true;
      Reply<T> r;
      try {
        r =
            Replies.supplyAsyncOrInline(
                op,
                () -> !(refuseWhileCreating && creating) && !(refuseAfterCreating && !creating),
                executor,
                name());
      } finally {
        creating = false;
      }
      if (!hideRunsOnAwait) {
        return r;
      }
      return new Reply<>() {
        @Override
        public T await(Duration timeout) {
          return r.await(timeout);
        }

        @Override
        public void abandon(Consumer<? super T> lateAnswer) {
          r.abandon(lateAnswer);
        }

        @Override
        public void send() {
          r.send();
        }
      };
    }

    void maybeStall(Duration budget) {
      if (budget != null && stallInline) {
        try {
          Thread.sleep(budget.toMillis() + 1);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        throw new NodeTimeoutException(name(), budget);
      }
    }

    @Override
    public String name() {
      return store.name();
    }

    @Override
    public NodeCapabilities capabilities() {
      return store.capabilities();
    }

    @Override
    public Reply<io.redlock.spi.NodeStatus> status() {
      return store.status();
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      return call(
          b -> {
            maybeStall(b);
            return store.tryAcquire(key, token, ttl).await(Duration.ofSeconds(1));
          });
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return call(b -> store.release(key, token).await(Duration.ofSeconds(1)));
    }

    @Override
    public Reply<Boolean> extend(String key, String token, Duration ttl) {
      return call(b -> store.extend(key, token, ttl).await(Duration.ofSeconds(1)));
    }

    @Override
    public void close() {}
  }

  /** An asynchronous node whose answers come after {@code delayMs}. */
  static class SlowAsyncNode implements LockNode {
    final InMemoryLockNode store;
    final long delayMs;

    SlowAsyncNode(String name, long delayMs) {
      this.store = new InMemoryLockNode(name, Ticker.system());
      this.delayMs = delayMs;
    }

    private <T> Reply<T> later(Reply<T> r) {
      return Replies.of(
          CompletableFuture.supplyAsync(
              () -> r.await(Duration.ofSeconds(1)),
              CompletableFuture.delayedExecutor(delayMs, TimeUnit.MILLISECONDS)),
          name());
    }

    @Override
    public String name() {
      return store.name();
    }

    @Override
    public NodeCapabilities capabilities() {
      return store.capabilities();
    }

    @Override
    public Reply<io.redlock.spi.NodeStatus> status() {
      return store.status();
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      return later(store.tryAcquire(key, token, ttl));
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return later(store.release(key, token));
    }

    @Override
    public Reply<Boolean> extend(String key, String token, Duration ttl) {
      return later(store.extend(key, token, ttl));
    }

    @Override
    public void close() {}
  }

  private static QuorumRedlock redlock(List<LockNode> nodes) {
    RedlockSettings s =
        RedlockSettings.defaults()
            .withNodeTimeout(Duration.ofMillis(200))
            .withRetry(1, Duration.ofMillis(10), Duration.ofMillis(10));
    return new QuorumRedlock(nodes, s, Ticker.system());
  }

  @Test
  @DisplayName("starts before an earlier node's call that the engine runs itself")
  void startsBeforeAnEarlierInlineRun() {
    // node-0: inline refused when made (no idle connection / last call failed), allowed by the
    // time it is awaited; its workers are busy; it stalls. node-1: healthy, deferred.
    StealNode stalled = new StealNode("node-0", NEVER, true, false);
    stalled.stallInline = true;
    StealNode healthy = new StealNode("node-1", worker, false, false);
    InMemoryLockNode fast = new InMemoryLockNode("node-2", Ticker.system());
    QuorumRedlock redlock = redlock(List.of(stalled, healthy, fast));

    Optional<Lease> lease = redlock.tryAcquire("k", Duration.ofSeconds(10));
    // 2 of 3 healthy nodes: node-1 and node-2 grant it, node-1 on its worker while the engine's
    // thread waits out node-0's stall.
    assertThat(lease).as("node-1 + node-2 are a quorum").isPresent();
  }

  @Test
  @DisplayName("is queued at once when it may no longer run inline")
  void queuedWhenInlineIsRefused() {
    // node-0: an idle connection when the call is made, none when it is awaited (another thread
    // took it); its workers are busy. node-1: queued, its workers busy too, but the engine's
    // thread can run it, and must, instead of waiting for node-0.
    StealNode starved = new StealNode("node-0", NEVER, false, false);
    starved.refuseAfterCreating = true;
    StealNode busy = new StealNode("node-1", NEVER, true, false);
    InMemoryLockNode fast = new InMemoryLockNode("node-2", Ticker.system());
    QuorumRedlock redlock = redlock(List.of(starved, busy, fast));

    Optional<Lease> lease = redlock.tryAcquire("k", Duration.ofSeconds(10));
    assertThat(lease).as("node-1 (run by the engine) + node-2 are a quorum").isPresent();
  }

  /** A node that is down: every call fails at once. */
  static class DownNode extends SlowAsyncNode {
    DownNode(String name) {
      super(name, 0);
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      throw new io.redlock.RedlockTransientException(name(), "down", null);
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      throw new io.redlock.RedlockTransientException(name(), "down", null);
    }
  }

  @Test
  @DisplayName("starts before other waits when a wrapper hides runsOnAwait")
  void startsBeforeOtherWaitsBehindAWrapper() {
    SlowAsyncNode slow = new SlowAsyncNode("node-0", 1_000); // answers after the node timeout
    StealNode wrapped = new StealNode("node-1", worker, false, true);
    InMemoryLockNode fast = new InMemoryLockNode("node-2", Ticker.system());
    QuorumRedlock redlock = redlock(List.of(slow, wrapped, fast));

    Optional<Lease> lease = redlock.tryAcquire("k", Duration.ofSeconds(10));
    assertThat(lease).as("node-1 + node-2 are a quorum").isPresent();
  }

  /** How a broken node fails: a backend bug that reaches the engine as an Error. */
  enum Breakage {
    /** Its replies throw when the engine asks {@code runsOnAwait()} (inside the await loop). */
    REPLY,
    /** The call itself throws (inside the fan-out, after the kept-back call was made). */
    CALL
  }

  /** A node that, once broken, fails its calls with an Error. */
  static class BrokenNode extends SlowAsyncNode {
    volatile Breakage breakage;

    BrokenNode(String name) {
      super(name, 0);
    }

    private <T> Reply<T> maybeBreak(Reply<T> inner) {
      Breakage b = breakage;
      if (b == Breakage.CALL) {
        throw new NoClassDefFoundError("com/example/Codec");
      }
      if (b == null) {
        return inner;
      }
      return new Reply<>() {
        @Override
        public T await(Duration timeout) {
          return inner.await(timeout);
        }

        @Override
        public void abandon(Consumer<? super T> lateAnswer) {
          inner.abandon(lateAnswer);
        }

        @Override
        public boolean runsOnAwait() {
          throw new AssertionError("backend bug");
        }
      };
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      return maybeBreak(super.tryAcquire(key, token, ttl));
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return maybeBreak(super.release(key, token));
    }
  }

  /** Polls (bounded) until {@code key} is free on {@code node}'s store. */
  private static boolean freed(StealNode node, String key) throws InterruptedException {
    for (int i = 0; i < 100; i++) {
      if (node.store
          .tryAcquire(key, "probe", Duration.ofMillis(1))
          .await(Duration.ofSeconds(1))
          .acquired()) {
        return true;
      }
      Thread.sleep(20);
    }
    return false;
  }

  @ParameterizedTest(name = "the Error comes from {0}")
  @EnumSource(Breakage.class)
  @DisplayName("a kept-back release runs even when an Error ends the release early")
  void releaseRunsAfterAnError(Breakage breakage) throws Exception {
    StealNode holder = new StealNode("node-0", worker, false, false);
    BrokenNode broken = new BrokenNode("node-1");
    InMemoryLockNode fast = new InMemoryLockNode("node-2", Ticker.system());
    QuorumRedlock redlock = redlock(List.of(holder, broken, fast));
    Lease lease = redlock.tryAcquire("k", Duration.ofSeconds(10)).orElseThrow();

    broken.breakage = breakage;
    assertThatThrownBy(lease::release).isInstanceOf(Error.class);
    // node-0's release was kept back, and the Error came before the engine got to it
    assertThat(freed(holder, "k")).as("node-0's key was released").isTrue();
  }

  @Test
  @DisplayName("a kept-back acquire runs at once when an Error ends the attempt early")
  void acquireRunsAfterAnError() throws Exception {
    StealNode holder = new StealNode("node-0", worker, false, false);
    BrokenNode broken = new BrokenNode("node-1");
    broken.breakage = Breakage.REPLY;
    QuorumRedlock redlock = redlock(List.of(holder, broken, new DownNode("node-2")));
    assertThatThrownBy(() -> redlock.tryAcquire("k", Duration.ofSeconds(10)))
        .isInstanceOf(AssertionError.class);
    // as a queued call would have: now, not at this thread's next lock call
    boolean ran = false;
    for (int i = 0; i < 100 && !ran; i++) {
      ran =
          holder
                  .store
                  .tryAcquire("k", "probe", Duration.ofMillis(1))
                  .await(Duration.ofSeconds(1))
                  .acquired()
              == false;
      if (!ran) {
        Thread.sleep(20);
      }
    }
    assertThat(ran).as("node-0's acquire ran").isTrue();
  }

  @Test
  @DisplayName("a kept-back call whose backend fails the inline question runs on a worker")
  void inlineQuestionFails() {
    AtomicInteger asked = new AtomicInteger();
    Reply<String> reply =
        Replies.supplyAsyncOrInline(
            budget -> budget == null ? "worker" : "inline",
            () -> {
              if (asked.incrementAndGet() > 1) {
                throw new IllegalStateException("pool closed");
              }
              return true;
            },
            worker,
            "node-0");
    assertThat(reply.runsOnAwait()).isTrue(); // the engine keeps it back
    assertThat(reply.await(Duration.ofSeconds(5))).isEqualTo("worker");
  }
}
