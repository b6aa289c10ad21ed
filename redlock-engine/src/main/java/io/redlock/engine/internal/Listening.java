package io.redlock.engine.internal;

import io.redlock.LeaseLost;
import io.redlock.NodeTimeoutException;
import io.redlock.RedlockListener;
import io.redlock.RedlockNonTransientException;
import io.redlock.ReleaseOutcome;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Redlock's {@link RedlockListener}, called safely: a listener that throws is logged (once per
 * kind of call) and otherwise ignored. {@link #on} is false for {@link RedlockListener#NONE}, so
 * the engine skips the work of preparing what nobody hears (ticker reads, outcomes).
 */
final class Listening {
  private static final Logger LOG = LoggerFactory.getLogger(Listening.class);

  final boolean on;
  private final RedlockListener listener;
  private volatile boolean warned;

  Listening(RedlockListener listener) {
    this.listener = listener;
    this.on = listener != RedlockListener.NONE;
  }

  void nodeCall(
      String node, String operation, Object answer, RuntimeException failure, long nanos) {
    RedlockListener.Outcome outcome;
    if (failure == null) {
      boolean yes =
          answer instanceof Boolean b
              ? b
              : !(answer instanceof io.redlock.spi.AcquireResult r) || r.acquired();
      outcome = yes ? RedlockListener.Outcome.YES : RedlockListener.Outcome.NO;
    } else if (failure instanceof NodeTimeoutException) {
      outcome = RedlockListener.Outcome.TIMED_OUT;
    } else if (failure instanceof RedlockNonTransientException) {
      outcome = RedlockListener.Outcome.MISCONFIGURED;
    } else {
      outcome = RedlockListener.Outcome.FAILED;
    }
    RedlockListener.Outcome o = outcome;
    safely(() -> listener.nodeCall(node, operation, o, nanos));
  }

  void acquisition(String resource, boolean acquired, int attempts, long nanos) {
    safely(() -> listener.acquisition(resource, acquired, attempts, nanos));
  }

  void extension(String resource, boolean extended) {
    safely(() -> listener.extension(resource, extended));
  }

  void released(String resource, ReleaseOutcome outcome) {
    safely(() -> listener.released(resource, outcome));
  }

  void lost(LeaseLost lost) {
    safely(() -> listener.lost(lost));
  }

  private void safely(Runnable call) {
    try {
      call.run();
    } catch (RuntimeException e) {
      if (!warned) {
        warned = true;
        LOG.warn("the RedlockListener {} threw; ignored (logged once)", listener, e);
      }
    }
  }
}
