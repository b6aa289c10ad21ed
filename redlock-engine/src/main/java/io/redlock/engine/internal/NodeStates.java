package io.redlock.engine.internal;

import io.redlock.NodeHealth;
import io.redlock.NodeTimeoutException;
import io.redlock.RedlockNonTransientException;
import io.redlock.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The health of every node as the engine's calls see it ({@link NodeHealth}): calls in flight, the
 * time of the last answer, failures since then, and whether the node is up or down.
 *
 * <p>A node goes {@link NodeHealth.State#DOWN} when {@value NodeHealth#FAILURES_TO_DOWN} calls in a
 * row failed and it has not answered for {@link #QUIET_NANOS} either (a node that never answered:
 * its failures began that long ago): a node that is only slow, whose timed-out calls still answer
 * late, stays up, and so does a node still opening its first connections. It is {@link
 * NodeHealth.State#UP} again at its first answer. Each change is logged once, by the thread that
 * made it: WARN with the cause going down, INFO coming back. Nothing is logged per call.
 *
 * <p>Thread-safe and cheap on the calls' path: an atomic counter per start and end, a plain write
 * per answer, and the state changed by compare-and-set only on a transition.
 */
final class NodeStates {
  private static final Logger LOG = LoggerFactory.getLogger(NodeStates.class);

  /** A node that answered within this long is not declared down, whatever failed meanwhile. */
  static final long QUIET_NANOS = 1_000_000_000L;

  /** While a node is down, one call in this long is waited for in full (a probe). */
  static final long PROBE_NANOS = 250_000_000L;

  private static final int UNKNOWN = 0;
  private static final int UP = 1;
  private static final int DOWN = 2;

  private static final class State {
    final String name;
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger failuresInARow = new AtomicInteger();
    final AtomicInteger state = new AtomicInteger(UNKNOWN);
    volatile boolean answeredOnce;
    volatile long lastAnswer;

    /** When the current run of failures began. */
    volatile long failingSince;

    volatile RuntimeException lastError;

    /** When a call on the node, down, was last waited for in full. */
    final java.util.concurrent.atomic.AtomicLong lastProbe =
        new java.util.concurrent.atomic.AtomicLong();

    /** The non-transient cause last logged, so that each is logged once until the node answers. */
    final java.util.concurrent.atomic.AtomicReference<String> warned =
        new java.util.concurrent.atomic.AtomicReference<>();

    State(String name) {
      this.name = name;
    }
  }

  private final State[] states;
  private final Ticker ticker;

  NodeStates(String[] names, Ticker ticker) {
    this.ticker = ticker;
    this.states = new State[names.length];
    for (int i = 0; i < names.length; i++) {
      states[i] = new State(names[i]);
    }
  }

  /**
   * Whether a fan-out should wait for {@code node}'s answer until its deadline: yes unless the node
   * is down, then only for one call in {@link #PROBE_NANOS} (a probe). The others take only an
   * answer already there: a node that is down costs the fan-outs no waiting, and its calls still go
   * out (those already sent are read to their end), so an answer, in time or late, brings it back.
   */
  boolean waitFor(int node) {
    State s = states[node];
    if (s.state.get() != DOWN) {
      return true;
    }
    long now = ticker.read();
    long last = s.lastProbe.get();
    return now - last >= PROBE_NANOS && s.lastProbe.compareAndSet(last, now);
  }

  void started(int node) {
    states[node].inFlight.incrementAndGet();
  }

  /** A started call on {@code node} ended: answered, failed, or its late outcome came in. */
  void ended(int node) {
    states[node].inFlight.decrementAndGet();
  }

  void answered(int node) {
    State s = states[node];
    s.lastAnswer = ticker.read();
    s.answeredOnce = true;
    if (s.failuresInARow.get() != 0) {
      s.failuresInARow.set(0);
    }
    if (s.warned.get() != null) {
      s.warned.set(null);
    }
    int was = s.state.get();
    if (was != UP && s.state.compareAndSet(was, UP) && was == DOWN) {
      LOG.info("{} is back: it answers again", s.name);
    }
  }

  /** A call on {@code node} failed: could not be started, failed, or timed out. */
  void failed(int node, RuntimeException failure) {
    State s = states[node];
    s.lastError = failure;
    boolean misconfigured = failure instanceof RedlockNonTransientException;
    if (misconfigured) {
      String cause = describe(failure);
      String was = s.warned.get();
      if (!cause.equals(was) && s.warned.compareAndSet(was, cause)) {
        LOG.warn(
            "{} fails in a way no retry fixes: {}. Fix it: until then, with strictNodes (the"
                + " default) acquisitions fail, and without it the others outvote it and the"
                + " quorum has lost this node's fault tolerance",
            s.name,
            cause);
      }
    }
    int failures = s.failuresInARow.incrementAndGet();
    long now = ticker.read();
    if (failures == 1) {
      s.failingSince = now;
    }
    if (failures < NodeHealth.FAILURES_TO_DOWN || s.state.get() == DOWN) {
      return;
    }
    if (s.answeredOnce ? now - s.lastAnswer < QUIET_NANOS : now - s.failingSince < QUIET_NANOS) {
      return; // it answered a moment ago (slow, not down), or is still making its connections
    }
    int was = s.state.get();
    if (was == DOWN) {
      return;
    }
    s.lastProbe.set(ticker.read()); // the next probe is one period after going down
    if (s.state.compareAndSet(was, DOWN) && !misconfigured) {
      LOG.warn(
          "{} is down: {} calls in a row failed{}; last: {}. Locks go on while a majority"
              + " answers; the node is used again as soon as it answers",
          s.name,
          failures,
          s.answeredOnce
              ? " and it has not answered for " + (ticker.read() - s.lastAnswer) / 1_000_000 + " ms"
              : " and it has never answered",
          describe(failure));
    }
  }

  private static String describe(RuntimeException failure) {
    if (failure instanceof NodeTimeoutException) {
      return "no answer within the node timeout";
    }
    String message = failure.getMessage();
    return message == null ? failure.getClass().getSimpleName() : message;
  }

  /** A snapshot of every node, in node order. */
  /** Per node, whether it is down or has never answered: not worth waiting for. */
  boolean[] down() {
    boolean[] out = new boolean[states.length];
    for (int i = 0; i < out.length; i++) {
      out[i] = states[i].state.get() == DOWN || !states[i].answeredOnce;
    }
    return out;
  }

  List<NodeHealth> snapshot() {
    long now = ticker.read();
    List<NodeHealth> out = new ArrayList<>(states.length);
    for (State s : states) {
      int state = s.state.get();
      RuntimeException error = s.lastError;
      boolean failing = s.failuresInARow.get() > 0 || state == DOWN;
      out.add(
          new NodeHealth(
              s.name,
              state == UP
                  ? NodeHealth.State.UP
                  : state == DOWN ? NodeHealth.State.DOWN : NodeHealth.State.UNKNOWN,
              failing && error != null ? Optional.of(describe(error)) : Optional.empty(),
              Math.max(0, s.inFlight.get()),
              s.answeredOnce
                  ? Optional.of(Duration.ofNanos(Math.max(0, now - s.lastAnswer)))
                  : Optional.empty()));
    }
    return out;
  }
}
