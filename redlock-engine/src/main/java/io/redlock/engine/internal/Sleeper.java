package io.redlock.engine.internal;

import java.util.concurrent.TimeUnit;

/** Pauses the calling thread between attempts; tests replace it to move a fake ticker instead. */
@FunctionalInterface
interface Sleeper {
  /** Sleeps the system's way. */
  Sleeper SYSTEM = TimeUnit.NANOSECONDS::sleep;

  /** Pauses for {@code nanos} (zero returns at once). */
  void sleep(long nanos) throws InterruptedException;
}
