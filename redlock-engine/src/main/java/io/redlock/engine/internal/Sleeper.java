package io.redlock.engine.internal;

import java.util.concurrent.TimeUnit;

/** Pauses the calling thread between attempts; tests replace it to move a fake ticker instead. */
@FunctionalInterface
interface Sleeper {
  /** Sleeps the system's way, and parks on a {@link Wakeup} for {@link #await}. */
  Sleeper SYSTEM =
      new Sleeper() {
        @Override
        public void sleep(long nanos) throws InterruptedException {
          TimeUnit.NANOSECONDS.sleep(nanos);
        }

        @Override
        public boolean await(Wakeup wakeup, long nanos) throws InterruptedException {
          return wakeup.await(nanos);
        }
      };

  /** Pauses for {@code nanos} (zero returns at once). */
  void sleep(long nanos) throws InterruptedException;

  /**
   * Pauses for {@code nanos} or until {@code wakeup} is raised, whichever comes first; true if it
   * was raised. This default (for fake sleepers) only looks at the wakeup before and after a full
   * {@link #sleep}.
   */
  default boolean await(Wakeup wakeup, long nanos) throws InterruptedException {
    if (wakeup.isRaised()) {
      return true;
    }
    sleep(nanos);
    return wakeup.isRaised();
  }
}
