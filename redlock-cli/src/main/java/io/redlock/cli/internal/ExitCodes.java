package io.redlock.cli.internal;

/**
 * The tool's own exit codes. They follow sysexits(3) where one fits and stay clear of the codes
 * commands commonly return (0-2, 126, 127, 128+signal), so that a script can tell "the lock" from
 * "the command" after {@code redlock exec}.
 */
final class ExitCodes {
  private ExitCodes() {}

  /** Success; for exec, the command's own exit code is returned instead. */
  static final int OK = 0;

  /** EX_USAGE: invalid option, duration or node URI, unknown scheme, unusable configuration. */
  static final int USAGE = 64;

  /**
   * EX_UNAVAILABLE: too few nodes answered to form a quorum, or too few of them may vote because of
   * restart quarantine.
   */
  static final int UNREACHABLE = 69;

  /** EX_SOFTWARE: an unexpected internal error (a bug: please report it). */
  static final int INTERNAL = 70;

  /** EX_TEMPFAIL: the lock is held by someone else (after --wait, or at once with --no-wait). */
  static final int BUSY = 75;

  /**
   * EX_CONFIG: nodes fail in a way no retry fixes (a wrong password, a missing table, an unknown
   * host): too many for a quorum, or any with --strict; and for doctor, a TTL or node timeout that
   * does not fit the measured latencies.
   */
  static final int CONFIG = 78;

  /**
   * The lock was lost while the command ran; for extend and release, the token no longer holds the
   * lock (past sysexits' range, so no command uses it).
   */
  static final int LOST = 79;

  /** As shells do: the command exists but cannot be executed. */
  static final int CANNOT_EXECUTE = 126;

  /** As shells do: the command was not found. */
  static final int NOT_FOUND = 127;

  /** The exit-code table shown by every {@code --help}. */
  static final String[] HELP = {
    "0:success; for exec: the command's own exit code is passed through",
    "64:bad usage: invalid option or duration, malformed node URI, unknown scheme, bad config"
        + " file, REDLOCK_NODES set but empty, a node listed twice, or a node lacks what --fencing"
        + " or --quarantine needs",
    "69:nodes unreachable: too few nodes answered to form a quorum (or, with --quarantine, too few"
        + " may vote yet)",
    "70:internal error (please report it)",
    "75:lock busy: held by someone else after --wait (or at once with --no-wait); exec -E CODE"
        + " chooses another",
    "78:nodes misconfigured: a node fails in a way no retry fixes (wrong password, missing table,"
        + " unknown host), with --strict (the default) or when too few others are left for a"
        + " quorum; each node and cause is named. doctor: the TTL or node timeout does not fit the"
        + " measured latencies",
    "79:lock lost while the command ran (it was stopped unless --no-kill-on-loss), or found"
        + " deleted by another client when exec released it after the command; extend,"
        + " release: the token no longer holds the lock. exec --lost-exit-code CODE chooses"
        + " another",
    "126:the command cannot be executed",
    "127:the command was not found",
    "129/130/143:SIGHUP / Ctrl-C (SIGINT) / SIGTERM: the command was stopped, the lock released",
  };
}
