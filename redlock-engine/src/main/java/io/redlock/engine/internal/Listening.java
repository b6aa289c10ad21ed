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
    try {
      listener.nodeCall(node, operation, outcome, nanos);
    } catch (RuntimeException e) {
      failed(e);
    }
  }

  void acquisition(String resource, boolean acquired, int attempts, long nanos) {
    try {
      listener.acquisition(resource, acquired, attempts, nanos);
    } catch (RuntimeException e) {
      failed(e);
    }
  }

  void extension(String resource, boolean extended) {
    try {
      listener.extension(resource, extended);
    } catch (RuntimeException e) {
      failed(e);
    }
  }

  void released(String resource, ReleaseOutcome outcome) {
    try {
      listener.released(resource, outcome);
    } catch (RuntimeException e) {
      failed(e);
    }
  }

  void lost(LeaseLost lost) {
    try {
      listener.lost(lost);
    } catch (RuntimeException e) {
      failed(e);
    }
  }

  private void failed(RuntimeException e) {
    if (!warned) {
      warned = true;
      LOG.warn("the RedlockListener {} threw; ignored (logged once)", listener, e);
    }
  }
}
