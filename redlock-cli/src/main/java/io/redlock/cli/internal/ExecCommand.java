package io.redlock.cli.internal;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.Redlock;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockSettings;
import io.redlock.ReleaseOutcome;
import io.redlock.spi.NodeUri;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code redlock exec LOCKNAME -- COMMAND...}: runs a command while holding a lock, like flock(1)
 * or {@code consul lock}, extending the lock while the command runs.
 */
@Command(
    name = "exec",
    customSynopsis = "redlock exec [OPTIONS] LOCKNAME -- COMMAND [ARGS...]",
    sortOptions = false,
    usageHelpAutoWidth = true,
    mixinStandardHelpOptions = true,
    description = {
      "Runs COMMAND while holding the lock LOCKNAME on a majority of the nodes.",
      "The lock is extended every TTL/3 while the command runs. If it cannot be extended before its"
          + " validity runs out, the lock is lost: redlock says so on stderr, stops the command"
          + " (unless --no-kill-on-loss) and exits with 79.",
      "The command gets REDLOCK_LOCK_NAME, REDLOCK_TOKEN (the lease's random token),"
          + " REDLOCK_TTL_MS and, with --fencing, REDLOCK_FENCING_TOKEN in its environment (see"
          + " below). Its exit code is passed through. On Ctrl-C or SIGTERM the command is"
          + " stopped and the lock released.",
    },
    footer = {
      "",
      "Examples:",
      "  redlock exec backup -- rsync -a /data /backup",
      "  redlock exec --no-wait --ttl 2m deploy -- ./deploy.sh",
      "  redlock exec --fencing nightly -- ./nightly.sh  # sends $REDLOCK_FENCING_TOKEN",
      "  redlock exec --wait forever --nodes redis://a:6379,redis://b:6379,redis://c:6379 \\",
      "      nightly -- ./nightly.sh"
    })
final class ExecCommand implements Callable<Integer> {
  @Option(
      names = "--ttl",
      defaultValue = "30s",
      converter = Durations.class,
      paramLabel = "DURATION",
      description =
          "Time to live of the lock on each node; renewed while the command runs."
              + " Default: ${DEFAULT-VALUE}.")
  Duration ttl;

  @Option(
      names = "--wait",
      paramLabel = "DURATION",
      description =
          "How long to wait for the lock if it is busy ('forever' for no limit)."
              + " Default: 10s.")
  String waitText;

  @Option(
      names = "--no-wait",
      description =
          "Do not wait for a busy lock: exit with 75 at once if another client holds it. (An"
              + " attempt that fails because too few nodes answered in time is repeated up to "
              + NO_WAIT_ATTEMPTS
              + " times in all before exiting with 69.)")
  boolean noWait;

  @Option(
      names = "--fencing",
      description =
          "Give the lease a fencing token and export it to the command as REDLOCK_FENCING_TOKEN: a"
              + " positive integer greater than the token of every earlier holder of LOCKNAME,"
              + " whatever majority of nodes granted either. Send it with every write to the"
              + " protected resource and have the resource refuse writes with a lower token"
              + " (e.g. UPDATE ... SET fence = :token WHERE fence <= :token): a holder that was"
              + " paused past its validity can then no longer overwrite the next holder's work."
              + " Costs one more round trip; every node must keep fencing counters (Redis, JDBC"
              + " and MongoDB nodes do), else exit 64.")
  boolean fencing;

  @Option(
      names = "--quarantine",
      converter = Durations.class,
      paramLabel = "MAXTTL",
      description =
          "Restart quarantine: count the vote of a node whose lock state is not durable only once"
              + " it has been up for MAXTTL (plus the drift allowance), MAXTTL being the longest"
              + " TTL any client of these nodes uses. A node that restarted and forgot its locks"
              + " then cannot help a second client to a majority (the Redlock description's"
              + " delayed restart). --ttl may not exceed MAXTTL. Every node must report its"
              + " status, else exit 64. Cost: while a majority of nodes are in quarantine (after"
              + " they restart, or when first deployed) no lock can be acquired (exit 69)."
              + " Default: off.")
  Duration quarantine;

  @Option(
      names = "--extend-every",
      converter = Durations.class,
      paramLabel = "DURATION",
      description = "How often to extend the lock while the command runs. Default: TTL/3.")
  Duration extendEvery;

  @Option(
      names = "--no-kill-on-loss",
      description =
          "If the lock is lost, only report it and let the command finish"
              + " (the exit code is still 79).")
  boolean noKillOnLoss;

  @Option(
      names = "--kill-grace",
      defaultValue = "10s",
      converter = Durations.class,
      paramLabel = "DURATION",
      description =
          "How long a stopped command gets between SIGTERM and SIGKILL."
              + " Default: ${DEFAULT-VALUE}.")
  Duration killGrace;

  @Mixin NodeOptions nodeOptions;

  @Spec CommandSpec spec;

  /** With --no-wait: attempts in all when too few nodes answered (never when the lock is held). */
  static final int NO_WAIT_ATTEMPTS = 3;

  @Parameters(index = "0", paramLabel = "LOCKNAME", description = "The name of the lock.")
  String lockName;

  @Parameters(
      index = "1..*",
      arity = "1..*",
      paramLabel = "COMMAND",
      description = "The command and its arguments, best after --.")
  List<String> command;

  private final PrintStream err = System.err;
  private final Object state = new Object();
  private final CountDownLatch mainDone = new CountDownLatch(1);
  private final AtomicBoolean cleanedUp = new AtomicBoolean();
  private final AtomicBoolean lost = new AtomicBoolean();

  /** Set when a signal arrived; guarded by {@link #state} together with {@link #child}. */
  private boolean stopping;

  private Process child;
  private volatile Lease lease;
  volatile Redlock redlock;
  private volatile Thread extender;

  @Override
  public Integer call() {
    List<String> argv = command;
    if (!argv.isEmpty() && argv.get(0).startsWith("-") && !argv.get(0).equals("--")) {
      String option = argv.get(0).split("=", 2)[0];
      if (spec.findOption(option) != null) {
        throw new CliException(
            ExitCodes.USAGE,
            "option "
                + option
                + " comes after LOCKNAME, where the command starts; put options first:"
                + " redlock exec [OPTIONS] LOCKNAME -- COMMAND [ARGS...]");
      }
    }
    if (!argv.isEmpty() && argv.get(0).equals("--")) {
      argv = argv.subList(1, argv.size()); // "--" after LOCKNAME when options stopped at it
    }
    if (argv.isEmpty()) {
      throw new CliException(
          ExitCodes.USAGE, "no command given; write: redlock exec LOCKNAME -- COMMAND [ARGS...]");
    }
    if (noWait && waitText != null) {
      throw new CliException(ExitCodes.USAGE, "--wait and --no-wait exclude each other");
    }
    Duration maxWait = noWait ? Duration.ZERO : parseWait(waitText == null ? "10s" : waitText);
    Duration interval = extendEvery != null ? extendEvery : ttl.dividedBy(3);
    if (interval.isZero() || interval.isNegative() || interval.compareTo(ttl) >= 0) {
      throw new CliException(
          ExitCodes.USAGE,
          "--extend-every ("
              + Durations.format(interval)
              + ") must be positive and shorter than --ttl ("
              + Durations.format(ttl)
              + "), e.g. a third of it");
    }
    checkQuarantine(quarantine, ttl);
    NodeOptions.Selection selection = nodeOptions.select(System.getenv(), err);
    List<NodeOptions.Requirement> requirements = new ArrayList<>();
    if (fencing) {
      requirements.add(NodeOptions.Requirement.FENCING);
    }
    if (quarantine != null) {
      requirements.add(NodeOptions.Requirement.STATUS);
    }
    redlock =
        nodeOptions.build(
            selection,
            b -> {
              b.maxExtensions(Integer.MAX_VALUE).fencing(fencing);
              return quarantine == null ? b : b.restartQuarantine(quarantine);
            },
            requirements);
    Thread main = Thread.currentThread();
    Thread hook = new Thread(() -> onSignal(main), "redlock-exec-signal");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      return run(argv, maxWait, interval, selection);
    } finally {
      cleanup();
      mainDone.countDown();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // a signal is being handled: the hook finishes the job
      }
    }
  }

  /** --quarantine must be positive and at least --ttl, as the engine requires: say so up front. */
  static void checkQuarantine(Duration quarantine, Duration ttl) {
    if (quarantine == null) {
      return;
    }
    if (quarantine.isZero() || quarantine.isNegative()) {
      throw new CliException(
          ExitCodes.USAGE,
          "--quarantine must be positive: the longest TTL any client of these nodes uses, e.g."
              + " --quarantine 1m");
    }
    if (ttl.compareTo(quarantine) > 0) {
      throw new CliException(
          ExitCodes.USAGE,
          "--ttl ("
              + Durations.format(ttl)
              + ") is longer than --quarantine ("
              + Durations.format(quarantine)
              + "): a node restarted without durable lock state could vote again before this lock"
              + " expired. Use a --ttl of at most "
              + Durations.format(quarantine)
              + ", or raise --quarantine to the longest TTL you use");
    }
  }

  /** Why an acquisition failed, as far as the exit code is concerned. */
  enum Failure {
    /** Enough nodes answered, and too many of them said the lock is held. */
    BUSY,
    /** Too few nodes answered in time to form a quorum. */
    UNREACHABLE,
    /** Enough nodes granted, but too few of their votes count: restart quarantine. */
    QUARANTINE
  }

  /**
   * Classifies a failed acquisition by the engine's reason: held elsewhere is "busy"; too few
   * answers, answers too slow to leave validity, or an unconfirmed fencing token are the nodes'
   * fault ("unreachable"); restart quarantine has its own message.
   */
  static Failure classify(LockTimeoutException e) {
    return switch (e.reason()) {
      case HELD -> Failure.BUSY;
      case RESTART_QUARANTINE -> Failure.QUARANTINE;
      case UNREACHABLE, TOO_SLOW, FENCING_NOT_CONFIRMED -> Failure.UNREACHABLE;
    };
  }

  /**
   * Acquires the lock. With --no-wait, an attempt that failed because too few nodes answered in
   * time (a node stalled for a moment, as happens on a loaded machine) is not "busy": it is
   * repeated a few times after the usual random pause before giving up.
   */
  Lease acquire(Duration maxWait) throws InterruptedException {
    for (int attempt = 1; ; attempt++) {
      try {
        return redlock.acquire(lockName, ttl, maxWait);
      } catch (LockTimeoutException e) {
        if (!noWait || attempt >= NO_WAIT_ATTEMPTS || classify(e) != Failure.UNREACHABLE) {
          throw e;
        }
        if (nodeOptions.verbose) {
          err.println("redlock: " + NodeUri.redact(e.getMessage()) + "; trying again");
        }
        RedlockSettings settings = redlock.settings();
        long min = settings.retryDelayMin().toNanos();
        long max = Math.max(min + 1, settings.retryDelayMax().toNanos());
        TimeUnit.NANOSECONDS.sleep(ThreadLocalRandom.current().nextLong(min, max));
      }
    }
  }

  private int run(List<String> argv, Duration maxWait, Duration interval, NodeOptions.Selection s) {
    try {
      lease = acquire(maxWait);
    } catch (LockTimeoutException e) {
      Failure failure = classify(e);
      err.println(
          "redlock: "
              + switch (failure) {
                case BUSY -> "lock busy";
                case UNREACHABLE -> "nodes unreachable";
                case QUARANTINE -> "too few nodes may vote (restart quarantine)";
              }
              + ": "
              + NodeUri.redact(e.getMessage()));
      if (e.getCause() instanceof RedlockNonTransientException cause) {
        err.println("redlock: cause: " + NodeUri.redact(cause.getMessage()));
      }
      return failure == Failure.BUSY ? ExitCodes.BUSY : ExitCodes.UNREACHABLE;
    } catch (InterruptedException e) {
      return 130; // a signal cut the wait short; the hook reports it
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, e.getMessage(), e);
    }
    if (!lease.quarantinedNodes().isEmpty()) {
      // The lease holds on a majority of the other nodes; say why a granting node did not count.
      err.println(
          "redlock: note: restart quarantine: the votes of "
              + String.join(", ", lease.quarantinedNodes())
              + " did not count (restarted, or started, without durable lock state less than "
              + Durations.format(quarantine)
              + " ago)");
    }
    if (nodeOptions.verbose) {
      err.printf(
          Locale.ROOT,
          "redlock: acquired '%s' on %d nodes (%s), validity %s%s; running %s%n",
          lockName,
          redlock.nodes().size(),
          s.source(),
          Durations.format(lease.remainingValidity()),
          fencing ? ", fencing token " + lease.fencingToken() : "",
          argv);
    }
    ProcessBuilder pb = new ProcessBuilder(argv).inheritIO();
    pb.environment().put("REDLOCK_LOCK_NAME", lockName);
    pb.environment().put("REDLOCK_TOKEN", lease.token());
    pb.environment().put("REDLOCK_TTL_MS", Long.toString(ttl.toMillis()));
    if (fencing) {
      pb.environment().put("REDLOCK_FENCING_TOKEN", Long.toString(lease.fencingToken()));
    } else {
      pb.environment().remove("REDLOCK_FENCING_TOKEN"); // not one inherited from an outer exec
    }
    Process started;
    synchronized (state) {
      if (stopping) {
        return 130;
      }
      try {
        child = pb.start();
      } catch (IOException e) {
        return cannotStart(argv.get(0), e);
      }
      started = child;
    }
    Thread t = new Thread(() -> keepExtended(started, interval), "redlock-exec-extender");
    t.setDaemon(true);
    extender = t;
    t.start();
    int code = waitFor(started);
    t.interrupt();
    joinQuietly(t);
    if (lost.get()) {
      return ExitCodes.LOST;
    }
    return code;
  }

  private int cannotStart(String program, IOException e) {
    String message = String.valueOf(e.getMessage());
    boolean notFound = message.contains("error=2,") || message.contains("No such file");
    err.println(
        "redlock: cannot run '"
            + program
            + "': "
            + (notFound ? "command not found" : message)
            + " (the lock was released)");
    return notFound ? ExitCodes.NOT_FOUND : ExitCodes.CANNOT_EXECUTE;
  }

  private static Duration parseWait(String text) {
    String t = text.strip().toLowerCase(Locale.ROOT);
    if (t.equals("forever") || t.equals("infinite") || t.equals("inf")) {
      return Duration.ofDays(365L * 1000);
    }
    try {
      Duration d = Durations.parse(text);
      if (d.isNegative()) {
        throw new IllegalArgumentException("--wait must not be negative");
      }
      return d;
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, "--wait: " + e.getMessage(), e);
    }
  }

  /**
   * Extends the lease every {@code interval} until the command ends. After a failed extension it
   * retries sooner, as long as the lease is still valid; once the validity has run out, the lock is
   * lost.
   */
  private void keepExtended(Process command, Duration interval) {
    long retryNanos = Math.max(1_000_000L, Math.min(interval.toNanos() / 3, 1_000_000_000L));
    long delayNanos = interval.toNanos();
    int failures = 0;
    while (command.isAlive()) {
      long sleep = Math.min(delayNanos, Math.max(1, lease.remainingValidity().toNanos()));
      try {
        TimeUnit.NANOSECONDS.sleep(sleep);
      } catch (InterruptedException e) {
        return; // the command ended
      }
      if (!command.isAlive()) {
        return;
      }
      if (!lease.isValid()) {
        // Woke up past the validity: this process was stopped or starved longer than the TTL.
        lockLost(
            command,
            failures,
            "its validity ran out before the extension was due; was this process paused or"
                + " starved for longer than the TTL?");
        return;
      }
      boolean extended;
      String why = "a majority of nodes did not confirm in time";
      try {
        extended = lease.extend(ttl);
      } catch (IllegalStateException released) {
        return; // released by a signal handler
      } catch (RuntimeException e) {
        extended = false;
        why = NodeUri.redact(e.toString());
      }
      if (extended) {
        if (failures > 0 && nodeOptions.verbose) {
          err.println("redlock: extending '" + lockName + "' works again");
        }
        failures = 0;
        delayNanos = interval.toNanos();
        continue;
      }
      failures++;
      if (!lease.isValid()) {
        lockLost(command, failures, why);
        return;
      }
      if (failures == 1) {
        err.println(
            "redlock: warning: could not extend '"
                + lockName
                + "' ("
                + why
                + "); "
                + Durations.format(lease.remainingValidity())
                + " of validity left, retrying");
      }
      delayNanos = retryNanos;
    }
  }

  private void lockLost(Process command, int failures, String why) {
    lost.set(true);
    boolean kill = !noKillOnLoss;
    err.println();
    err.println("redlock: ************************************************************");
    err.println(
        "redlock: LOCK LOST: '"
            + lockName
            + "': "
            + (failures == 0
                ? why
                : "could not be extended ("
                    + failures
                    + (failures == 1 ? " attempt: " : " attempts: ")
                    + why
                    + ") and its validity ran out")
            + ".");
    err.println("redlock: Another process may hold it now.");
    err.println(
        kill
            ? "redlock: Stopping the command (pid "
                + command.pid()
                + "); redlock will exit with "
                + ExitCodes.LOST
                + "."
            : "redlock: --no-kill-on-loss: the command keeps running; redlock will exit with "
                + ExitCodes.LOST
                + ".");
    err.println("redlock: ************************************************************");
    err.flush();
    if (kill) {
      terminate(command);
    }
  }

  /** Called by the JVM on SIGTERM / SIGINT (Ctrl-C): stop the command, release, then let go. */
  private void onSignal(Thread main) {
    if (mainDone.getCount() == 0) {
      return; // normal exit
    }
    Process c;
    synchronized (state) {
      stopping = true;
      c = child;
    }
    err.println(
        "redlock: interrupted: "
            + (c != null ? "stopping the command and " : "")
            + "releasing '"
            + lockName
            + "'");
    if (c != null) {
      terminate(c);
    } else {
      main.interrupt(); // cut a wait for the lock short
    }
    try {
      // The main thread releases once the command is gone; wait for it, within bounds.
      if (!mainDone.await(killGrace.toMillis() + 10_000, TimeUnit.MILLISECONDS)) {
        cleanup();
      }
    } catch (InterruptedException e) {
      cleanup();
    }
  }

  /** SIGTERM to the command and its descendants, SIGKILL after the grace period. */
  private void terminate(Process command) {
    List<ProcessHandle> family = command.descendants().toList(); // before they are orphaned
    command.destroy();
    family.forEach(ProcessHandle::destroy);
    try {
      if (!command.waitFor(killGrace.toMillis(), TimeUnit.MILLISECONDS)) {
        err.println(
            "redlock: the command did not stop within "
                + Durations.format(killGrace)
                + " of SIGTERM; killing it");
        command.destroyForcibly();
        command.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      command.destroyForcibly();
    }
    family.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
  }

  private static int waitFor(Process process) {
    while (true) {
      try {
        return process.waitFor();
      } catch (InterruptedException e) {
        // only the signal handler interrupts, and it stops the process: keep waiting for it
        if (!process.isAlive()) {
          return process.exitValue();
        }
      }
    }
  }

  private static void joinQuietly(Thread t) {
    try {
      t.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Releases the lease (if any) and closes the nodes; once, from whichever thread comes first. */
  private void cleanup() {
    if (!cleanedUp.compareAndSet(false, true)) {
      return;
    }
    Thread t = extender;
    if (t != null) {
      t.interrupt();
    }
    Lease l = lease;
    Redlock r = redlock;
    try {
      if (l != null) {
        ReleaseOutcome outcome = l.release();
        if (!outcome.complete()) {
          err.println(
              "redlock: warning: released '"
                  + lockName
                  + "' on "
                  + outcome.answered()
                  + " of "
                  + outcome.nodes()
                  + " nodes; on "
                  + outcome.failedNodes()
                  + " it expires by its TTL ("
                  + Durations.format(ttl)
                  + ")");
        }
      }
    } catch (RuntimeException e) {
      err.println("redlock: warning: release of '" + lockName + "' failed: " + e.getMessage());
    } finally {
      if (r != null) {
        r.close();
      }
    }
  }
}
