package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.RedlockSettings;
import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.random.RandomGenerator;

/**
 * N fault-injecting in-memory nodes on one fake ticker, and a Redlock over them whose retry pauses
 * move the ticker instead of sleeping.
 */
final class Cluster {
  /** Retry pauses and node timeouts that make arithmetic in tests easy to follow. */
  static final RedlockSettings SETTINGS =
      RedlockSettings.defaults()
          .withNodeTimeout(Duration.ofMillis(50))
          .withRetry(3, Duration.ofMillis(50), Duration.ofMillis(250));

  final FakeTicker ticker = new FakeTicker();
  final List<String> events = Collections.synchronizedList(new ArrayList<>());
  final List<FaultyNode> nodes = new ArrayList<>();
  final List<Long> pauses = Collections.synchronizedList(new ArrayList<>());

  /** Pauses (their planned length) that a release notification cut short. */
  final List<Long> wakeups = Collections.synchronizedList(new ArrayList<>());

  RandomGenerator random = new Random(42);

  /** Runs at each pause, before the ticker moves; may throw to simulate an interrupt. */
  volatile PauseHook onPause = n -> {};

  interface PauseHook {
    void pausing(int pauseNumber) throws InterruptedException;
  }

  Cluster(int n) {
    this(n, false);
  }

  /** N nodes whose stores keep their keys across {@code store.restart()} if {@code durable}. */
  Cluster(int n, boolean durable) {
    for (int i = 0; i < n; i++) {
      nodes.add(new FaultyNode("node-" + i, ticker, events, durable));
    }
  }

  FaultyNode node(int i) {
    return nodes.get(i);
  }

  QuorumRedlock redlock() {
    return redlock(SETTINGS);
  }

  QuorumRedlock redlock(RedlockSettings settings) {
    Sleeper sleeper =
        new Sleeper() {
          @Override
          public void sleep(long nanos) throws InterruptedException {
            pauses.add(nanos);
            onPause.pausing(pauses.size());
            ticker.advanceNanos(nanos);
          }

          @Override
          public boolean await(Wakeup wakeup, long nanos) throws InterruptedException {
            pauses.add(nanos);
            onPause.pausing(pauses.size());
            if (wakeup.isRaised()) {
              // A release notification (raised before or by the hook) ends the pause at once.
              wakeups.add(nanos);
              return true;
            }
            ticker.advanceNanos(nanos);
            return false;
          }
        };
    return new QuorumRedlock(
        List.<LockNode>copyOf(nodes),
        settings,
        ticker,
        sleeper,
        random,
        false,
        io.redlock.RedlockListener.NONE);
  }

  /** Another client takes {@code key} on the given nodes, straight on the stores. */
  void holdElsewhere(String key, int... indexes) {
    for (int i : indexes) {
      assertThat(
              nodes
                  .get(i)
                  .store
                  .tryAcquire(key, "another-client", Duration.ofMinutes(10))
                  .await(Duration.ZERO)
                  .acquired())
          .isTrue();
    }
  }

  /** How many nodes hold {@code key} now, with any token. */
  int holding(String key) {
    int count = 0;
    for (FaultyNode node : nodes) {
      if (node.store.owner(key).isPresent()) {
        count++;
      }
    }
    return count;
  }

  /** How many nodes hold {@code key} with {@code token}. */
  int holding(String key, String token) {
    int count = 0;
    for (FaultyNode node : nodes) {
      if (node.store.owner(key).filter(token::equals).isPresent()) {
        count++;
      }
    }
    return count;
  }

  List<Integer> calls(java.util.function.Function<FaultyNode, Number> counter) {
    List<Integer> out = new ArrayList<>();
    for (FaultyNode node : nodes) {
      out.add(counter.apply(node).intValue());
    }
    return out;
  }

  List<Integer> acquireCalls() {
    return calls(n -> n.acquireCalls.get());
  }

  List<Integer> releaseCalls() {
    return calls(n -> n.releaseCalls.get());
  }

  List<Integer> extendCalls() {
    return calls(n -> n.extendCalls.get());
  }

  static List<Integer> times(int n, int value) {
    return Collections.nCopies(n, value);
  }

  /** The engine's side of the Reply contract held on every node. */
  void assertRepliesSettled() {
    for (FaultyNode node : nodes) {
      assertThat(node.violations).as("reply contract violations on %s", node.name()).isEmpty();
      assertThat(node.unsettledReplies())
          .as("replies of %s neither awaited nor abandoned", node.name())
          .isZero();
    }
  }
}
