package io.redlock.cli.internal;

import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.Redlock;
import io.redlock.RedlockListener;
import io.redlock.ReleaseOutcome;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What exec hears of its lease and says when it is lost. As the engine's listener it hears the node
 * calls and extensions of the lease (keep-alive's and any other): to warn at the first failed
 * extension; and to tell, when the lease is lost, a process that was paused past its validity (the
 * renewal found the validity gone before it could ask any node) from nodes that stopped answering.
 */
final class ExecLoss implements RedlockListener {
  private final String lockName;
  private final PrintStream err;
  private final boolean verbose;

  /** Set by exec once built, acquired, and its margin known. */
  volatile Redlock redlock;

  volatile Lease lease;
  volatile Duration margin;

  ExecLoss(String lockName, PrintStream err, boolean verbose) {
    this.lockName = lockName;
    this.err = err;
    this.verbose = verbose;
  }

  private final Object lock = new Object();
  private int calls;
  private final Map<String, Outcome> outcomes = new LinkedHashMap<>();
  private Map<String, Outcome> lastFailure = Map.of();
  private Map<String, Outcome> lastOutcomes = Map.of();
  private int failures;
  private int failuresWithCalls;
  private boolean lastWithoutCalls;

  /** The validity the lease had at its last failed extension, and when that was (nanoTime). */
  private Duration leftAtFailure = Duration.ZERO;

  private long failedAt;

  /** When the lease's validity ends (nanoTime), as of its acquisition or last extension. */
  private long validUntil;

  private boolean validUntilKnown;

  /** Notes the lease's validity now: after the acquisition, and after each extension. */
  void valid(Lease l) {
    long now = System.nanoTime();
    Duration left = l.remainingValidity();
    synchronized (lock) {
      validUntil = now + left.toNanos();
      validUntilKnown = true;
    }
  }

  /** The validity left at {@code now} (nanoTime) by the last acquisition or extension. */
  Duration validityAt(long now) {
    synchronized (lock) {
      long left = validUntil - now;
      return !validUntilKnown || left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
    }
  }

  @Override
  public void nodeCall(String node, String operation, Outcome outcome, long nanos) {
    synchronized (lock) {
      if (operation.equals("extend")) {
        calls++;
        outcomes.put(node, outcome);
      }
    }
  }

  @Override
  public void extension(String resource, boolean extended) {
    boolean warn = false;
    boolean again = false;
    String why = null;
    synchronized (lock) {
      if (extended) {
        again = failures > 0;
        failures = 0;
        failuresWithCalls = 0;
      } else {
        failures++;
        lastWithoutCalls = calls == 0;
        if (calls > 0) {
          failuresWithCalls++;
          lastFailure = Map.copyOf(outcomes);
          why = describe(lastFailure);
          warn = failuresWithCalls == 1;
        }
      }
      lastOutcomes = Map.copyOf(outcomes);
      calls = 0;
      outcomes.clear();
    }
    Lease l = lease;
    if (extended && l != null) {
      valid(l);
    }
    if (!extended && l != null) {
      // Still held here: the engine tells its listener before it declares a loss.
      Duration left = l.remainingValidity();
      synchronized (lock) {
        leftAtFailure = left;
        failedAt = System.nanoTime();
      }
    }
    if (again && verbose) {
      err.println("redlock: extending '" + lockName + "' works again");
    }
    if (warn && l != null && l.remainingValidity().compareTo(margin) > 0) {
      err.printf(
          "redlock: warning: could not extend '%s' (%s); %s of validity left, retrying; the command"
              + " is stopped if %s or less is left%n",
          lockName, why, Durations.format(l.remainingValidity()), Durations.human(margin));
    }
  }

  /** How the nodes answered the last extension, by outcome. */
  Map<Outcome, Long> lastCounts() {
    synchronized (lock) {
      Map<Outcome, Long> counts = new java.util.EnumMap<>(Outcome.class);
      lastOutcomes.values().forEach(o -> counts.merge(o, 1L, Long::sum));
      return counts;
    }
  }

  /** Whether the failed extension that preceded a loss asked no node: its validity was gone. */
  boolean pausedPastValidity() {
    synchronized (lock) {
      return lastWithoutCalls && failuresWithCalls == 0;
    }
  }

  /** What is left of the validity the lease had at its last failed extension. */
  Duration validityLeft() {
    synchronized (lock) {
      Duration left = leftAtFailure.minusNanos(System.nanoTime() - failedAt);
      return left.isNegative() ? Duration.ZERO : left;
    }
  }

  int failedAttempts() {
    synchronized (lock) {
      return failures;
    }
  }

  /** How the nodes answered the last extension that asked them, e.g. "a: yes, b: timed out". */
  private String describe(Map<String, Outcome> byNode) {
    long yes = byNode.values().stream().filter(o -> o == Outcome.YES).count();
    List<String> parts = new ArrayList<>();
    byNode.forEach(
        (node, outcome) -> {
          if (outcome != Outcome.YES) {
            parts.add(
                node
                    + ": "
                    + switch (outcome) {
                      case NO -> "no longer holds the token";
                      case TIMED_OUT -> "timed out";
                      case MISCONFIGURED -> "misconfigured";
                      default -> "failed";
                    });
          }
        });
    return "%d of %d nodes agreed, a quorum needs %d%s"
        .formatted(yes, redlock.nodes().size(), redlock.quorum(), Verdict.list("; ", parts, ""));
  }

  /**
   * Says LOCK LOST, why, and what becomes of the command: {@code c} the command (null if not
   * started), stopped with SIGTERM (SIGKILL after {@code grace}) when {@code kill}.
   */
  void report(LeaseLost l, Process c, boolean kill, Duration grace) {
    Duration validity = validityLeft(l);
    err.println();
    err.println(BANNER);
    err.println("redlock: LOCK LOST: '" + lockName + "': " + cause(l) + ".");
    if (l.reason() == LeaseLost.Reason.UNREACHABLE && !pausedPastValidity()) {
      CliWords.nodeErrors(redlock).forEach(e -> err.println("redlock:   " + e));
    }
    err.println(
        validity.isZero()
            ? "redlock: Another process may hold it now."
            : "redlock: It stays valid for at most another %s; after that another process may hold it."
                .formatted(Durations.format(validity)));
    if (c == null) {
      err.println("redlock: The command was not started; redlock will exit with 79.");
    } else if (kill) {
      err.printf(
          "redlock: Stopping the command (pid %d: SIGTERM, SIGKILL after %s); redlock will exit"
              + " with %d.%n",
          c.pid(), Durations.human(grace), ExitCodes.LOST);
    } else {
      err.printf(
          "redlock: --no-kill-on-loss: the command keeps running; redlock will exit with %d.%n",
          ExitCodes.LOST);
    }
    err.println(BANNER);
    err.flush();
  }

  private static final String BANNER =
      "redlock: ************************************************************";

  /**
   * What validity the loss leaves: for a loss while extensions kept failing, what the lease had
   * left; for a token gone from the nodes, or validity run out, none.
   */
  private Duration validityLeft(LeaseLost l) {
    if (l.reason() != LeaseLost.Reason.UNREACHABLE || pausedPastValidity()) {
      return Duration.ZERO;
    }
    return validityLeft();
  }

  /** Who takes a lease's token from the nodes while the lease is still valid. */
  static final String DELETED =
      "the lock was deleted by another client (redlock unlock --force? redlock release with its"
          + " token?)";

  /** The real cause of a loss, in words. */
  String cause(LeaseLost l) {
    Duration validity = validityAt(System.nanoTime());
    return switch (l.reason()) {
      case TOKEN_GONE ->
          validity.isZero()
              ? "the nodes no longer hold its token ("
                  + l.detail()
                  + "): its key expired on them, or someone deleted it (e.g. redlock unlock"
                  + " --force)"
              : DELETED
                  + ": the nodes no longer hold its token ("
                  + l.detail()
                  + "), though its TTL left it valid for another "
                  + Durations.format(validity);
      case UNREACHABLE ->
          pausedPastValidity()
              ? "this process was paused or starved for longer than the lock's validity (e.g."
                  + " SIGSTOP, a long GC pause, a suspended VM): when the extension finally ran,"
                  + " the validity had already run out"
              : "it could not be extended: %s (%d attempt%s)"
                  .formatted(l.detail(), failedAttempts(), failedAttempts() == 1 ? "" : "s");
      case EXPIRED ->
          "its validity ran out before an extension succeeded (was this process paused or"
              + " starved?)";
      case CLOSED, RELEASED -> l.detail();
    };
  }

  /** LOCK LOST for a token that the release found gone while the lease was still valid. */
  void reportGoneAtRelease(ReleaseOutcome outcome, Duration validity, int code) {
    err.println();
    err.println(BANNER);
    err.printf(
        "redlock: LOCK LOST: '%s': %s while the command ran: at its release, %d of %d nodes no"
            + " longer held its token (a quorum needs %d), though its TTL left it valid for another"
            + " %s.%n",
        lockName,
        DELETED,
        outcome.answered() - outcome.deleted(),
        outcome.nodes(),
        redlock.quorum(),
        Durations.format(validity));
    err.println("redlock: Another process may have held it while the command ran.");
    err.printf(
        "redlock: The command had ended (exit code %d); redlock exits with %d.%n",
        code, ExitCodes.LOST);
    err.println(BANNER);
    err.flush();
  }

  /**
   * Whether a release found this lease's token absent on a majority: those nodes answered, but had
   * no key holding the token to delete.
   */
  static boolean goneAtRelease(ReleaseOutcome outcome, int quorum) {
    return outcome.answered() - outcome.deleted() >= quorum;
  }
}
