package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import io.redlock.spi.Reply;
import io.redlock.spi.support.Replies;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The engine awaits first the replies it can run itself ({@link Reply#runsOnAwait}): a blocking
 * backend's queued call is done on the engine's thread instead of waiting for a worker to wake.
 */
@DisplayName("The engine's await order")
class AwaitOrderTest {
  /** A worker pool that never runs anything: only the engine's thread can do the work. */
  private static final Executor NEVER = task -> {};

  /** Calls handed to the worker pool of the logging nodes. */
  private int queued;

  private final List<String> awaited = new CopyOnWriteArrayList<>();

  /**
   * An in-memory node whose replies log when they are awaited; a "blocking" one hands its calls to
   * {@link #NEVER} through {@link Replies#supplyAsyncOrInline}.
   */
  private final class LoggingNode extends WrappingNode {
    private final boolean blocking;

    /** False: the backend's own replies, unwrapped. */
    private final boolean logAwaits;

    LoggingNode(String name, boolean blocking) {
      this(name, blocking, true);
    }

    LoggingNode(String name, boolean blocking, boolean logAwaits) {
      super(new InMemoryLockNode(name, Ticker.system()));
      this.blocking = blocking;
      this.logAwaits = logAwaits;
    }

    @Override
    <T> Reply<T> wrap(Supplier<Reply<T>> call) {
      Reply<T> inner =
          blocking
              ? Replies.supplyAsyncOrInline(
                  budget -> call.get().await(budget),
                  () -> true,
                  task -> {
                    queued++;
                    NEVER.execute(task);
                  },
                  name())
              : call.get();
      if (!logAwaits) {
        return inner;
      }
      return new Reply<>() {
        @Override
        public T await(Duration timeout) {
          awaited.add(name());
          return inner.await(timeout);
        }

        @Override
        public void abandon(Consumer<? super T> lateAnswer) {
          inner.abandon(lateAnswer);
        }

        @Override
        public boolean runsOnAwait() {
          return inner.runsOnAwait();
        }

        @Override
        public void send() {
          inner.send();
        }
      };
    }
  }

  private QuorumRedlock redlock(List<LockNode> nodes) {
    return new QuorumRedlock(nodes, RedlockSettings.defaults(), Ticker.system());
  }

  @Test
  @DisplayName("a call queued for a worker that never comes is run by the engine's own thread")
  void engineThreadRunsQueuedCalls() {
    List<LockNode> nodes = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      nodes.add(new LoggingNode("blocking-" + i, true));
    }
    QuorumRedlock redlock = redlock(nodes);

    Optional<Lease> lease = redlock.tryAcquire("order-key", Duration.ofSeconds(30));
    assertThat(lease).isPresent();
    assertThat(lease.get().extend(Duration.ofSeconds(30))).isTrue();
    assertThat(lease.get().release().deleted()).isEqualTo(5);
  }

  @Test
  @DisplayName("replies the engine can run itself are awaited before the others, once each")
  void blockingRepliesFirst() {
    List<LockNode> nodes = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      nodes.add(new LoggingNode("async-" + i, false));
    }
    nodes.add(new LoggingNode("blocking-3", true));
    nodes.add(new LoggingNode("blocking-4", true));
    QuorumRedlock redlock = redlock(nodes);

    Lease lease = redlock.tryAcquire("order-key", Duration.ofSeconds(30)).orElseThrow();
    assertThat(awaited)
        .containsExactly("blocking-3", "blocking-4", "async-0", "async-1", "async-2");

    awaited.clear();
    lease.release();
    assertThat(awaited)
        .containsExactly("blocking-3", "blocking-4", "async-0", "async-1", "async-2");
  }

  @Test
  @DisplayName("the first blocking call of each fan-out is not queued: no worker is woken for it")
  void firstBlockingCallNotQueued() {
    List<LockNode> nodes = new ArrayList<>();
    nodes.add(new LoggingNode("async-0", false));
    for (int i = 1; i < 4; i++) {
      nodes.add(new LoggingNode("blocking-" + i, true, false));
    }
    QuorumRedlock redlock = redlock(nodes);

    Lease lease = redlock.tryAcquire("fan-out-key", Duration.ofSeconds(30)).orElseThrow();
    assertThat(queued).as("acquire: blocking-2 and blocking-3").isEqualTo(2);
    assertThat(lease.extend(Duration.ofSeconds(30))).isTrue();
    assertThat(queued).as("and the extension").isEqualTo(4);
    assertThat(lease.release().deleted()).isEqualTo(4);
    assertThat(queued).as("and the release").isEqualTo(6);

    // a call made directly is held until it is sent or awaited
    Reply<Boolean> direct = nodes.get(1).release("fan-out-key", "no-such-token");
    assertThat(queued).isEqualTo(6);
    direct.send();
    assertThat(queued).isEqualTo(7);
  }

  @Test
  @DisplayName("through wrappers that pass send() on, only the first blocking call is not queued")
  void wrappedCallsAreQueued() {
    List<LockNode> nodes = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      nodes.add(new LoggingNode("blocking-" + i, true));
    }
    Lease lease = redlock(nodes).tryAcquire("wrapped-key", Duration.ofSeconds(30)).orElseThrow();
    assertThat(queued).as("blocking-1 and blocking-2").isEqualTo(2);
    assertThat(lease.release().deleted()).isEqualTo(3);
  }

  @Test
  @DisplayName("a reply whose runsOnAwait() throws is awaited with the others, in fan-out order")
  void runsOnAwaitFailure() {
    Reply<String> odd =
        new Reply<>() {
          @Override
          public String await(Duration timeout) {
            return "odd";
          }

          @Override
          public void abandon(Consumer<? super String> lateAnswer) {}

          @Override
          public boolean runsOnAwait() {
            throw new IllegalStateException("backend bug");
          }
        };
    Reply<String> b = Replies.supplyAsyncOrInline(budget -> "b", () -> true, NEVER, "b");
    @SuppressWarnings("unchecked")
    Reply<String>[] replies = new Reply[] {odd, b};
    List<Reply<String>> order = new ArrayList<>();
    for (int step = 0; step < 4; step++) {
      Reply<String> next = FanOut.takeInAwaitOrder(replies, new int[] {0, 1}, step);
      if (next != null) {
        order.add(next);
      }
    }
    assertThat(order).containsExactly(b, odd);
  }

  @Test
  @DisplayName(
      "the await order hands out every reply once, runnable ones first, each group in fan-out order")
  void takeInAwaitOrder() {
    assertThat(awaitOrder(new int[] {0, 1, 2, 3, 4})).containsExactly("b", "d", "a", "c");
    assertThat(awaitOrder(new int[] {4, 3, 2, 1, 0})).containsExactly("d", "b", "c", "a");
    assertThat(awaitOrder(new int[] {3, 1, 0, 4, 2})).containsExactly("b", "d", "c", "a");
  }

  /** The answers of replies a..d (a null between b and c) in the order takeInAwaitOrder gives. */
  private static List<String> awaitOrder(int[] fanOutOrder) {
    Reply<String> a = Reply.of("a");
    Reply<String> b = Replies.supplyAsyncOrInline(budget -> "b", () -> true, NEVER, "b");
    Reply<String> c = Reply.of("c");
    Reply<String> d = Replies.supplyAsyncOrInline(budget -> "d", () -> true, NEVER, "d");
    @SuppressWarnings("unchecked")
    Reply<String>[] replies = new Reply[] {a, b, null, c, d};
    List<String> order = new ArrayList<>();
    for (int step = 0; step < 2 * replies.length; step++) {
      Reply<String> next = FanOut.takeInAwaitOrder(replies, fanOutOrder, step);
      if (next != null) {
        order.add(next.await(Duration.ofSeconds(1)));
      }
    }
    assertThat(replies).containsOnlyNulls();
    return order;
  }
}
