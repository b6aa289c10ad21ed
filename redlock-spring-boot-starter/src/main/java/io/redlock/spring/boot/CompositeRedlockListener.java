package io.redlock.spring.boot;

import io.redlock.LeaseLost;
import io.redlock.RedlockListener;
import io.redlock.ReleaseOutcome;
import java.util.List;

/**
 * Several listeners as one, for the builder's single listener. Each is called even if one before it
 * throws; the first exception is rethrown after all were called (the engine logs it once).
 */
final class CompositeRedlockListener implements RedlockListener {
  private final RedlockListener[] listeners;

  CompositeRedlockListener(List<RedlockListener> listeners) {
    this.listeners = listeners.toArray(RedlockListener[]::new);
  }

  @Override
  public void nodeCall(String node, String operation, Outcome outcome, long nanos) {
    RuntimeException first = null;
    for (RedlockListener l : listeners) {
      try {
        l.nodeCall(node, operation, outcome, nanos);
      } catch (RuntimeException e) {
        first = first == null ? e : first;
      }
    }
    rethrow(first);
  }

  @Override
  public void acquisition(String resource, boolean acquired, int attempts, long nanos) {
    RuntimeException first = null;
    for (RedlockListener l : listeners) {
      try {
        l.acquisition(resource, acquired, attempts, nanos);
      } catch (RuntimeException e) {
        first = first == null ? e : first;
      }
    }
    rethrow(first);
  }

  @Override
  public void extension(String resource, boolean extended) {
    RuntimeException first = null;
    for (RedlockListener l : listeners) {
      try {
        l.extension(resource, extended);
      } catch (RuntimeException e) {
        first = first == null ? e : first;
      }
    }
    rethrow(first);
  }

  @Override
  public void released(String resource, ReleaseOutcome outcome) {
    RuntimeException first = null;
    for (RedlockListener l : listeners) {
      try {
        l.released(resource, outcome);
      } catch (RuntimeException e) {
        first = first == null ? e : first;
      }
    }
    rethrow(first);
  }

  @Override
  public void lost(LeaseLost lost) {
    RuntimeException first = null;
    for (RedlockListener l : listeners) {
      try {
        l.lost(lost);
      } catch (RuntimeException e) {
        first = first == null ? e : first;
      }
    }
    rethrow(first);
  }

  private static void rethrow(RuntimeException first) {
    if (first != null) {
      throw first;
    }
  }

  @Override
  public String toString() {
    return "CompositeRedlockListener" + List.of(listeners);
  }
}
