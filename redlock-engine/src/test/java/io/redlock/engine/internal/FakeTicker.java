package io.redlock.engine.internal;

import io.redlock.Ticker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A ticker that moves only when told to. It starts just below {@code Long.MAX_VALUE}, so most tests
 * see its readings wrap around, as a monotonic clock may: the engine must only compare differences.
 */
final class FakeTicker implements Ticker {
  private final AtomicLong nanos;

  FakeTicker() {
    this(Long.MAX_VALUE - Duration.ofMillis(700).toNanos());
  }

  FakeTicker(long start) {
    nanos = new AtomicLong(start);
  }

  @Override
  public long read() {
    return nanos.get();
  }

  void advance(Duration d) {
    nanos.addAndGet(d.toNanos());
  }

  void advanceNanos(long d) {
    nanos.addAndGet(d);
  }
}
