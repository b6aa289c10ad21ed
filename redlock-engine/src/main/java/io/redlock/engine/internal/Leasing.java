package io.redlock.engine.internal;

import io.redlock.Ticker;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * What a lease needs of its Redlock, and no more: the nodes, the TTL arithmetic, the safety round
 * (or null), the scheduler for renewal and loss, and a way to wake this JVM's waiters on release.
 */
final class Leasing {
  final Quorum quorum;
  final Timing timing;
  final Safety safety;
  final Scheduler scheduler;
  final Ticker ticker;
  final Listening listening;
  private final Consumer<String> releasedLocally;

  Leasing(
      Quorum quorum,
      Timing timing,
      Safety safety,
      Scheduler scheduler,
      Consumer<String> releasedLocally) {
    this.quorum = quorum;
    this.timing = timing;
    this.safety = safety;
    this.scheduler = scheduler;
    this.ticker = quorum.ticker;
    this.listening = quorum.listening;
    this.releasedLocally = releasedLocally;
  }

  /** A lease on {@code resource} was just released: wakes its first waiter in this JVM. */
  void releasedLocally(String resource) {
    releasedLocally.accept(resource);
  }

  /**
   * Compare-and-extend on every node, awaited until {@code deadline}: the tally's yes votes and
   * when they reached the quorum. With restart quarantine a node's yes counts only if its status,
   * asked right after the yes, passes.
   */
  Tally extendAll(String resource, String token, Duration newTtl, long deadline) {
    boolean judged = safety != null && safety.quarantine();
    @SuppressWarnings({"unchecked", "rawtypes"}) // generic array creation
    Reply<NodeStatus>[] statuses = judged ? new Reply[quorum.size()] : null;
    long start = ticker.read();
    Tally tally = new Tally();
    quorum.fanOut.run(
        "extend",
        new FanOut.Policy<Boolean>() {
          @Override
          public Reply<Boolean> start(int node) {
            return quorum.nodes[node].extend(resource, token, newTtl);
          }

          @Override
          public void answered(int node, Boolean extended) {
            if (!Boolean.TRUE.equals(extended)) {
              tally.no++;
            } else if (judged) {
              statuses[node] = safety.startStatus(node);
            } else {
              tally.yes(quorum.quorum, ticker.read());
            }
          }

          @Override
          public void failed(int node, RuntimeException failure) {
            tally.fail(quorum.names[node], failure);
          }
          // a late "extended" only keeps our own key a little longer: nothing to undo
        },
        deadline);
    if (judged) {
      safety.judgeExtension(statuses, deadline, start, tally);
    }
    return tally;
  }
}
