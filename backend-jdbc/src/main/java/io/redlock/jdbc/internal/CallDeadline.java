package io.redlock.jdbc.internal;

/**
 * The deadline of the call that the current thread runs on behalf of a thread awaiting its reply
 * (an inline call), for the steps of it that block outside {@link LockTable}'s own code: HikariCP's
 * validation of an idle connection during the borrow (see {@link PoolConnections}), and waits for
 * the lock that guards the schema checks.
 */
final class CallDeadline {
  /** Per thread: whether a call with a deadline runs, its deadline (nanoTime), its budget. */
  private static final ThreadLocal<long[]> CURRENT = ThreadLocal.withInitial(() -> new long[3]);

  private CallDeadline() {}

  /**
   * Marks the current thread as running a call that must end within {@code budget} from now.
   *
   * @return the deadline, in {@link System#nanoTime} units
   */
  static long enter(java.time.Duration budget) {
    long[] d = CURRENT.get();
    long nanos;
    try {
      nanos = Math.min(budget.toNanos(), Long.MAX_VALUE / 4); // no overflow of the deadline
    } catch (ArithmeticException huge) {
      nanos = Long.MAX_VALUE / 4;
    }
    d[1] = System.nanoTime() + nanos;
    d[2] = nanos;
    d[0] = 1;
    return d[1];
  }

  /** Ends the mark of {@link #enter}. */
  static void exit() {
    CURRENT.get()[0] = 0;
  }

  /** Whether the current thread runs a call with a deadline. */
  static boolean active() {
    return CURRENT.get()[0] != 0;
  }

  /** The budget of the current thread's call, for messages; call only while {@link #active}. */
  static java.time.Duration budget() {
    return java.time.Duration.ofNanos(CURRENT.get()[2]);
  }

  /**
   * Nanoseconds left to the current thread's deadline (0 or less once passed); {@link
   * Long#MAX_VALUE} if it has none.
   */
  static long nanosLeft() {
    long[] d = CURRENT.get();
    return d[0] == 0 ? Long.MAX_VALUE : d[1] - System.nanoTime();
  }
}
