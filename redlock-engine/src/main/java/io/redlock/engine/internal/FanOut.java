package io.redlock.engine.internal;

import io.redlock.NodeTimeoutException;
import io.redlock.Ticker;
import io.redlock.spi.Reply;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's one fan-out: start a call on every node, then await every reply against one
 * deadline, handing each outcome to a {@link Policy}. Acquire, fenced acquire, release, extend, the
 * fence write-back and the status reads are policies over it.
 *
 * <p>What it does for every policy, once:
 *
 * <ul>
 *   <li>abandons a reply that timed out or whose wait was interrupted, so that the backend drops
 *       the call if it has not sent it yet, and hands its late outcome to {@link Policy#ended};
 *   <li>records every start, answer and failure in {@link NodeStates}: calls in flight, last
 *       answer, up or down; a node that is down is not waited for, but for a probe now and then
 *       ({@link NodeStates#waitFor});
 *   <li>on an {@link IllegalArgumentException} from a start (the caller's input), abandons the
 *       calls already started and rethrows.
 * </ul>
 *
 * <p>Runs on the calling thread; {@link Policy#ended} runs on whatever thread the backend ends the
 * call on.
 */
final class FanOut {
  private static final Logger LOG = LoggerFactory.getLogger(FanOut.class);

  /**
   * One kind of call, and what to do with each node's outcome. {@link #start}, {@link #answered}
   * and {@link #failed} run on the fan-out's thread, in await order.
   *
   * @param <T> the answer's type
   */
  interface Policy<T> {
    /**
     * Starts the call on {@code node}, or returns null to leave the node out.
     *
     * @throws IllegalArgumentException for the caller's input: the fan-out stops
     */
    Reply<T> start(int node);

    /** {@code node} answered in time. */
    void answered(int node, T answer);

    /** {@code node} could not be asked, failed, or did not answer in time. */
    void failed(int node, RuntimeException failure);

    /**
     * The call on {@code node} that {@link #failed} for want of an answer in time has ended: with
     * its late answer, or null if there is none. On any thread; must return quickly.
     */
    default void ended(int node, T late) {}

    /** The call on {@code node} is given up on: {@link #ended} follows. Must return quickly. */
    default void abandoned(int node) {}
  }

  private final String[] names;
  private final NodeStates states;
  private final Ticker ticker;
  private final Listening listening;

  FanOut(String[] names, NodeStates states, Ticker ticker, Listening listening) {
    this.names = names;
    this.states = states;
    this.ticker = ticker;
    this.listening = listening;
  }

  int size() {
    return names.length;
  }

  /**
   * Starts {@code policy}'s call on every node, then awaits the replies until {@code deadline} (a
   * ticker reading).
   */
  <T> void run(String operation, Policy<T> policy, long deadline) {
    run(operation, policy, deadline, false);
  }

  /**
   * One call on {@code node}, awaited until {@code deadline} even if the node is down (a probe):
   * returns its answer or throws its failure.
   */
  <T> T call(
      String operation, int node, java.util.function.Supplier<Reply<T>> start, long deadline) {
    Object[] answer = new Object[1];
    RuntimeException[] failure = new RuntimeException[1];
    run(
        operation,
        new Policy<T>() {
          @Override
          public Reply<T> start(int i) {
            return i == node ? start.get() : null;
          }

          @Override
          public void answered(int i, T a) {
            answer[0] = a;
          }

          @Override
          public void failed(int i, RuntimeException e) {
            failure[0] = e;
          }
        },
        deadline,
        true);
    if (failure[0] != null) {
      throw failure[0];
    }
    @SuppressWarnings("unchecked")
    T out = (T) answer[0];
    return out;
  }

  private <T> void run(String operation, Policy<T> policy, long deadline, boolean probing) {
    long began = listening.on ? ticker.read() : 0;
    @SuppressWarnings({"unchecked", "rawtypes"}) // generic array creation
    Reply<T>[] replies = new Reply[names.length];
    start(operation, policy, replies);
    for (int i = 0; i < replies.length; i++) {
      if (replies[i] != null) {
        await(operation, policy, i, replies[i], deadline, began, probing);
      }
    }
  }

  private <T> void start(String operation, Policy<T> policy, Reply<T>[] replies) {
    for (int i = 0; i < replies.length; i++) {
      try {
        replies[i] = policy.start(i);
      } catch (IllegalArgumentException e) {
        for (int j = 0; j < replies.length; j++) {
          if (replies[j] != null) {
            abandon(operation, policy, j, replies[j]);
            replies[j] = null;
          }
        }
        throw e;
      } catch (RuntimeException e) {
        if (listening.on) {
          listening.nodeCall(names[i], operation, null, e, 0);
        }
        fail(operation, policy, i, e);
        continue;
      }
      if (replies[i] != null) {
        states.started(i);
      }
    }
  }

  private <T> void await(
      String operation,
      Policy<T> policy,
      int i,
      Reply<T> reply,
      long deadline,
      long began,
      boolean probing) {
    T answer;
    try {
      answer = reply.await(probing || states.waitFor(i) ? remaining(deadline) : Duration.ZERO);
    } catch (RuntimeException e) {
      if (stillPending(e)) {
        abandon(operation, policy, i, reply);
      } else {
        states.ended(i);
      }
      if (listening.on) {
        listening.nodeCall(names[i], operation, null, e, ticker.read() - began);
      }
      fail(operation, policy, i, e);
      return;
    }
    states.ended(i);
    states.answered(i);
    if (listening.on) {
      listening.nodeCall(names[i], operation, answer, null, ticker.read() - began);
    }
    policy.answered(i, answer);
  }

  private <T> void fail(String operation, Policy<T> policy, int i, RuntimeException failure) {
    RuntimeException e = Misconfiguration.classify(names[i], failure);
    states.failed(i, e);
    if (LOG.isDebugEnabled()) {
      LOG.debug("{}: {} failed: {}", names[i], operation, e.toString());
    }
    policy.failed(i, e);
  }

  /** Gives up on a started call; its end, whenever it comes, is counted and passed on. */
  private <T> void abandon(String operation, Policy<T> policy, int i, Reply<T> reply) {
    policy.abandoned(i);
    try {
      reply.abandon(
          late -> {
            states.ended(i);
            if (late != null) {
              states.answered(i);
            }
            try {
              policy.ended(i, late);
            } catch (RuntimeException e) {
              LOG.warn("{}: handling the late end of {} failed", names[i], operation, e);
            }
          });
    } catch (RuntimeException e) {
      states.ended(i); // the backend broke its contract: do not count the call for ever
      LOG.debug("{}: could not abandon {}: {}", names[i], operation, e.toString());
      policy.ended(i, null);
    }
  }

  /**
   * Whether a reply that threw may still complete: it timed out, or this thread's interrupt cut the
   * wait short. Such a reply must be abandoned.
   */
  static boolean stillPending(RuntimeException e) {
    return e instanceof NodeTimeoutException || Thread.currentThread().isInterrupted();
  }

  /**
   * Time left until {@code deadline}; zero once past it or when interrupted (take only answers
   * already there, so cleanup never blocks an interrupted thread).
   */
  Duration remaining(long deadline) {
    if (Thread.currentThread().isInterrupted()) {
      return Duration.ZERO;
    }
    long left = deadline - ticker.read();
    return left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
  }
}
