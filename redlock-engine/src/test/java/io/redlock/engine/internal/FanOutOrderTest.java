package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.NodeTimeoutException;
import io.redlock.RedlockSettings;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The engine starts and awaits the nodes slowest first, as measured ({@link FanOutOrder}). The
 * nodes here simulate a network on a fake ticker: starting a call costs {@link #START_NANOS} (a
 * write to a socket), its answer is there a node's latency after the call started, and awaiting it
 * moves the ticker to that moment if it has not come yet.
 */
@DisplayName("The fan-out order")
class FanOutOrderTest {
  /** What starting one call costs the engine's thread. */
  private static final long START_NANOS = 10_000;

  private static final Duration TTL = Duration.ofSeconds(10);

  private final FakeTicker ticker = new FakeTicker();

  /** Node names in the order calls were started, one list per fan-out. */
  private final List<List<String>> fanOuts = new ArrayList<>();

  /** A node whose calls answer {@code latency} after they start, on {@link #ticker}. */
  private final class SimulatedNode extends WrappingNode {
    volatile long latencyNanos;

    /** Requests land, but no answer comes: every await times out. */
    volatile boolean stalled;

    SimulatedNode(String name, long latencyMicros) {
      super(new InMemoryLockNode(name, ticker));
      this.latencyNanos = latencyMicros * 1_000;
    }

    @Override
    <T> Reply<T> wrap(Supplier<Reply<T>> operation) {
      ticker.advanceNanos(START_NANOS);
      started(name());
      long answerAt = ticker.read() + latencyNanos;
      boolean answers = !stalled;
      Reply<T> inner = operation.get();
      return new Reply<>() {
        @Override
        public T await(Duration timeout) {
          if (!answers) {
            ticker.advance(timeout);
            throw new NodeTimeoutException(name(), timeout);
          }
          long left = answerAt - ticker.read();
          if (left > 0) {
            ticker.advanceNanos(left);
          }
          return inner.await(timeout);
        }

        @Override
        public void abandon(Consumer<? super T> lateAnswer) {
          inner.abandon(lateAnswer);
        }
      };
    }

    @Override
    public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
      return wrap(() -> store.tryAcquireFenced(key, token, ttl));
    }

    @Override
    public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
      return store.raiseFence(key, token, atLeast);
    }

    @Override
    public Reply<NodeStatus> status() {
      return store.status();
    }
  }

  /** Notes a started call; a call to the first node listed (or any node) opens a new fan-out. */
  private void started(String node) {
    if (fanOuts.isEmpty() || fanOuts.get(fanOuts.size() - 1).contains(node)) {
      fanOuts.add(new ArrayList<>());
    }
    fanOuts.get(fanOuts.size() - 1).add(node);
  }

  private List<String> lastFanOut() {
    return fanOuts.get(fanOuts.size() - 1);
  }

  /** Three nodes answering in 50 µs and two in 300 µs, the slow ones listed last. */
  private List<SimulatedNode> redisAndPostgres() {
    List<SimulatedNode> nodes = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      nodes.add(new SimulatedNode("fast-" + i, 50));
    }
    nodes.add(new SimulatedNode("slow-3", 300));
    nodes.add(new SimulatedNode("slow-4", 300));
    return nodes;
  }

  private QuorumRedlock redlock(List<SimulatedNode> nodes, RedlockSettings settings) {
    return new QuorumRedlock(
        List.copyOf(nodes), settings, ticker, Sleeper.SYSTEM, new java.util.Random(7), false);
  }

  /** Acquires and releases once; returns how long the acquisition took on the ticker, in µs. */
  private long cycle(QuorumRedlock redlock, String resource) {
    long before = ticker.read();
    Lease lease = redlock.tryAcquire(resource, TTL).orElseThrow();
    long took = ticker.read() - before;
    assertThat(lease.release().deleted()).isEqualTo(redlock.nodes().size());
    return took / 1_000;
  }

  @Test
  @DisplayName("the slow nodes, listed last, are started and awaited first once measured")
  void slowNodesMoveFirst() {
    QuorumRedlock redlock = redlock(redisAndPostgres(), RedlockSettings.defaults());

    // Listed order: the last slow node's answer comes 5 starts + 300 µs after the fan-out began.
    assertThat(cycle(redlock, "r")).isEqualTo(350);
    assertThat(lastFanOut()).containsExactly("fast-0", "fast-1", "fast-2", "slow-3", "slow-4");

    for (int i = 0; i < 200; i++) {
      cycle(redlock, "r");
    }
    // Measured order: the slow nodes' round trips cover the fast nodes' starts.
    assertThat(cycle(redlock, "r")).isEqualTo(320);
    assertThat(lastFanOut()).containsExactly("slow-3", "slow-4", "fast-0", "fast-1", "fast-2");
    assertThat(redlock.quorum.order.current()).containsExactly(3, 4, 0, 1, 2);
    // The extension and the fenced acquisition start in the same order.
    Lease lease = redlock.tryAcquire("e", TTL).orElseThrow();
    assertThat(lease.extend(TTL)).isTrue();
    assertThat(lastFanOut()).containsExactly("slow-3", "slow-4", "fast-0", "fast-1", "fast-2");
    lease.release();
  }

  @Test
  @DisplayName("with fencing on, the acquisition and the extension follow the measured order")
  void fencedFanOutsFollowTheOrder() {
    QuorumRedlock redlock =
        redlock(redisAndPostgres(), RedlockSettings.defaults().withFencing(true));
    assertThat(redlock.safety).isNotNull();

    for (int i = 0; i < 200; i++) {
      cycle(redlock, "f");
    }
    assertThat(redlock.quorum.order.current()).containsExactly(3, 4, 0, 1, 2);
    Lease lease = redlock.tryAcquire("f", TTL).orElseThrow();
    assertThat(lastFanOut()).containsExactly("slow-3", "slow-4", "fast-0", "fast-1", "fast-2");
    assertThat(lease.fencingToken()).isPositive();
    assertThat(lease.extend(TTL)).isTrue();
    assertThat(lastFanOut()).containsExactly("slow-3", "slow-4", "fast-0", "fast-1", "fast-2");
    lease.release();
  }

  @Test
  @DisplayName("a node that becomes the slowest is moved first; the order follows the network")
  void followsChanges() {
    List<SimulatedNode> nodes = redisAndPostgres();
    QuorumRedlock redlock = redlock(nodes, RedlockSettings.defaults());
    for (int i = 0; i < 200; i++) {
      cycle(redlock, "c");
    }
    assertThat(redlock.quorum.order.current()).containsExactly(3, 4, 0, 1, 2);

    nodes.get(1).latencyNanos = 2_000_000; // fast-1 is now 2 ms away
    for (int i = 0; i < 200; i++) {
      cycle(redlock, "c");
    }
    assertThat(redlock.quorum.order.current()[0]).isEqualTo(1);
    assertThat(cycle(redlock, "c")).isEqualTo(2_010);

    nodes.get(1).latencyNanos = 50_000; // and back
    for (int i = 0; i < 400; i++) {
      cycle(redlock, "c");
    }
    assertThat(cycle(redlock, "c")).isEqualTo(320);
    assertThat(lastFanOut().subList(0, 2)).containsExactlyInAnyOrder("slow-3", "slow-4");
  }

  @Test
  @DisplayName(
      "a node that times out goes last at once, so an extension near expiry still counts its"
          + " quorum in time; answering again, it is sorted by its waits")
  void timedOutNodeGoesLast() {
    List<SimulatedNode> nodes = redisAndPostgres();
    nodes.set(0, new SimulatedNode("stalled-0", 50));
    nodes.get(0).stalled = true;
    QuorumRedlock redlock = redlock(nodes, RedlockSettings.defaults());
    long timeoutMicros = redlock.timing.nodeTimeoutNanos(TTL) / 1_000;

    // Listed first, the stalled node is awaited first once, until the deadline; then it goes last.
    Lease lease = redlock.tryAcquire("t", TTL).orElseThrow();
    assertThat(redlock.quorum.order.current()).endsWith(0);
    assertThat(lease.release().deleted()).isEqualTo(4);
    assertThat(lastFanOut()).endsWith("stalled-0");
    for (int i = 0; i < 100; i++) {
      long took = ticker.read();
      lease = redlock.tryAcquire("t", TTL).orElseThrow();
      took = ticker.read() - took;
      assertThat(took / 1_000).isLessThanOrEqualTo(timeoutMicros + 50);
      lease.release();
    }
    assertThat(redlock.quorum.order.current()).containsExactly(3, 4, 1, 2, 0);

    // Extending with less validity left than a node timeout: the deadline is the old validity's
    // end, and the answers read after the stalled node's wait would come too late.
    lease = redlock.tryAcquire("t", TTL).orElseThrow();
    ticker.advanceNanos(lease.remainingValidity().toNanos() - timeoutMicros * 1_000 / 2);
    assertThat(lease.remainingValidity().toNanos()).isLessThan(timeoutMicros * 1_000);
    assertThat(lease.extend(TTL)).isTrue();
    assertThat(lastFanOut()).containsExactly("slow-3", "slow-4", "fast-1", "fast-2", "stalled-0");
    lease.release();

    nodes.get(0).stalled = false;
    for (int i = 0; i < 100; i++) {
      cycle(redlock, "t");
    }
    assertThat(redlock.quorum.order.current()).startsWith(3, 4);
    assertThat(cycle(redlock, "t")).isEqualTo(320);
  }

  @Test
  @DisplayName("nodes of equal speed keep the order they were listed in, in the same array")
  void equalNodesKeepTheirOrder() {
    List<SimulatedNode> nodes = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      nodes.add(new SimulatedNode("node-" + i, 50));
    }
    QuorumRedlock redlock = redlock(nodes, RedlockSettings.defaults());
    int[] first = redlock.quorum.order.current();
    for (int i = 0; i < 300; i++) {
      cycle(redlock, "same");
    }
    assertThat(redlock.quorum.order.current()).isSameAs(first).containsExactly(0, 1, 2, 3, 4);
    assertThat(redlock.quorum.order.waits()).doesNotContain(0L);
  }

  @Test
  @DisplayName("a single node is never measured")
  void singleNode() {
    QuorumRedlock redlock =
        redlock(List.of(new SimulatedNode("only", 50)), RedlockSettings.defaults());
    for (int i = 0; i < 50; i++) {
      cycle(redlock, "one");
    }
    assertThat(redlock.quorum.order.waits()).containsExactly(0);
  }

  @Nested
  @DisplayName("on its own")
  class Unit {
    private final FanOutOrder order = new FanOutOrder(new String[] {"a", "b", "c"});

    /** Runs {@code samples} measured fan-outs with these waits (ns) for nodes a, b, c. */
    private void feed(int samples, long a, long b, long c) {
      for (int s = 0; s < samples; s++) {
        order.waited(0, a);
        order.waited(1, b);
        order.waited(2, c);
        order.measured();
      }
    }

    @Test
    @DisplayName("starts in node order and measures one fan-out in " + FanOutOrder.SAMPLE_EVERY)
    void sampling() {
      assertThat(order.current()).containsExactly(0, 1, 2);
      int sampled = 0;
      for (int i = 0; i < 10 * FanOutOrder.SAMPLE_EVERY; i++) {
        if (order.sampleNext()) {
          sampled++;
        }
      }
      assertThat(sampled).isEqualTo(10);
    }

    @Test
    @DisplayName("works the order out again only every " + FanOutOrder.REORDER_EVERY + " samples")
    void reorderPeriod() {
      feed(FanOutOrder.REORDER_EVERY - 1, 0, 0, 100_000);
      assertThat(order.current()).containsExactly(0, 1, 2);
      feed(1, 0, 0, 100_000);
      assertThat(order.current()).containsExactly(2, 0, 1);
    }

    @Test
    @DisplayName("moves a node ahead only if its wait is clearly longer")
    void hysteresis() {
      feed(200, 100_000, 105_000, 100_500); // within an eighth: no change
      assertThat(order.current()).containsExactly(0, 1, 2);
      feed(200, 100_000, 130_000, 100_500); // b is clearly slower than a
      assertThat(order.current()).containsExactly(1, 0, 2);
      feed(200, 0, 0, 800); // all below the absolute margin
      assertThat(order.current()).containsExactly(1, 0, 2);
    }

    @Test
    @DisplayName("a node that became faster falls behind the ones that now wait longer")
    void fallsBehind() {
      feed(200, 0, 0, 300_000);
      assertThat(order.current()).containsExactly(2, 0, 1);
      feed(200, 50_000, 0, 0);
      assertThat(order.current()).containsExactly(0, 2, 1);
    }

    @Test
    @DisplayName("a timed-out node goes last at once and comes back when it answers")
    void timedOut() {
      feed(200, 0, 0, 300_000);
      assertThat(order.current()).containsExactly(2, 0, 1);
      order.timedOut(2);
      assertThat(order.current()).containsExactly(0, 1, 2);
      order.timedOut(0);
      assertThat(order.current())
          .as("timed-out nodes last, by their waits")
          .containsExactly(1, 2, 0);
      feed(FanOutOrder.REORDER_EVERY, 0, 0, 300_000); // answers again: sorted by waits
      assertThat(order.current()).containsExactly(2, 1, 0);
    }

    @Test
    @DisplayName("a negative wait (a ticker that went backwards) counts as none")
    void negativeWait() {
      feed(200, -5_000_000, 0, 0);
      assertThat(order.waits()).containsExactly(0, 0, 0);
    }
  }
}
