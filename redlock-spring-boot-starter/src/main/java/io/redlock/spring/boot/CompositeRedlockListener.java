package io.redlock.spring.boot;

import io.redlock.LeaseLost;
import io.redlock.RedlockListener;
import io.redlock.ReleaseOutcome;
import java.util.List;
import java.util.function.Consumer;

/**
 * Several listeners as one, for the builder's single listener. Each is called even if one before it
 * throws; the first exception is rethrown after all were called (the engine logs it once).
 */
final class CompositeRedlockListener implements RedlockListener {
  private final List<RedlockListener> listeners;

  CompositeRedlockListener(List<RedlockListener> listeners) {
    this.listeners = List.copyOf(listeners);
  }

  @Override
  public void nodeCall(String node, String operation, Outcome outcome, long nanos) {
    each(l -> l.nodeCall(node, operation, outcome, nanos));
  }

  @Override
  public void acquisition(String resource, boolean acquired, int attempts, long nanos) {
    each(l -> l.acquisition(resource, acquired, attempts, nanos));
  }

  @Override
  public void extension(String resource, boolean extended) {
    each(l -> l.extension(resource, extended));
  }

  @Override
  public void released(String resource, ReleaseOutcome outcome) {
    each(l -> l.released(resource, outcome));
  }

  @Override
  public void lost(LeaseLost lost) {
    each(l -> l.lost(lost));
  }

  private void each(Consumer<RedlockListener> call) {
    RuntimeException first = null;
    for (RedlockListener l : listeners) {
      try {
        call.accept(l);
      } catch (RuntimeException e) {
        first = first == null ? e : first;
      }
    }
    if (first != null) {
      throw first;
    }
  }

  @Override
  public String toString() {
    return "CompositeRedlockListener" + listeners;
  }
}
