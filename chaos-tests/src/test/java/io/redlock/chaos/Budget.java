package io.redlock.chaos;

/**
 * Every duration of the suite, in one place, so that the module's tests stay within about five
 * minutes on a shared 2-core machine. All in milliseconds.
 */
final class Budget {
  private Budget() {}

  /** How long client JVMs may take to start and connect (a bound, normally ~1-2 s). */
  static final long CLIENT_READY = 60_000;

  /** How long after its deadline a client JVM may take to end by itself. */
  static final long CLIENT_EXIT = 20_000;

  /**
   * Per-node timeout: generous for a busy 2-core machine (the default, TTL/50, is for networks).
   */
  static final long NODE_TIMEOUT = 250;

  /** The start of every run left out of "pre-fault" throughput: connections and JIT warming up. */
  static final long WARM_UP = 1_500;

  /** Beyond the TTL, how long C5 may wait for the stores to be clean. */
  static final long HYGIENE_SLACK = 1_500;

  /** What a fresh client may wait beyond the TTL (its retries). */
  static final long FRESH_RETRY = 1_000;

  // 1. contention
  static final long CONTENTION_RUN = 6_000;
  static final long CONTENTION_TTL = 2_000;

  // 2. a holder paused past its TTL
  static final long PAUSED_HOLDER_TTL = 1_500;

  /** The holder's pause between reading and writing; the SIGSTOP lands in it. */
  static final long PAUSED_HOLDER_WORK = 1_000;

  /** How long the holder stays frozen (longer than its TTL). */
  static final long HOLDER_PAUSE = 2_500;

  /** How long the newer holders run after the pause began. */
  static final long PAUSED_HOLDER_RUN = 4_000;

  // 3. two of five Redis nodes paused under load
  static final long STALL_PRE = 3_500;
  static final long STALL_PAUSE = 7_000;
  static final long STALL_POST = 4_000;
  static final long STALL_TTL = 4_000;

  /** After the resume, releases must be answered by all 5 nodes from this long on, sustained. */
  static final long STALL_REJOIN = 1_000;

  // 4. a node killed and restarted empty
  static final long RESTART_TTL = 4_000;

  /** How long the first holder holds (within its validity). */
  static final long RESTART_HOLD = 3_000;

  /** How long the contender runs after the restart. */
  static final long RESTART_CONTEND = 5_000;

  // 5. mixed quorum, one PostgreSQL crashed and restarted
  static final long MIXED_PRE = 3_500;
  static final long MIXED_DOWN = 2_500;
  static final long MIXED_POST = 4_000;
  static final long MIXED_TTL = 3_000;

  // 6. a client JVM killed while holding
  static final long KILL_TTL = 3_000;

  /** The victim JVM holds its first lease granted after this long, until killed. */
  static final long KILL_AFTER = 3_000;

  /** How long the others run after the victim's lease ran out. */
  static final long KILL_POST = 3_000;
}
