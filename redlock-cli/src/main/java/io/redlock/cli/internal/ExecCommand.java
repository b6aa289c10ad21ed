package io.redlock.cli.internal;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.LockTimeoutException;
import io.redlock.NodeFailure;
import io.redlock.Redlock;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockSettings;
import io.redlock.ReleaseOutcome;
import io.redlock.spi.NodeUri;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code redlock exec LOCKNAME -- COMMAND...}: runs a command while holding a lock, like flock(1)
 * or {@code consul lock}, keeping the lock alive while the command runs and stopping the command
 * while the lock is still valid when it cannot be kept.
 */
@Command(
    name = "exec",
    customSynopsis = "redlock exec [OPTIONS] LOCKNAME -- COMMAND [ARGS...]",
    sortOptions = false,
    usageHelpAutoWidth = true,
    mixinStandardHelpOptions = true,
    description = {
      "Runs COMMAND while holding the lock LOCKNAME on a majority of the nodes.",
      "The lock is extended every TTL/3 while the command runs. When extensions keep failing,"
          + " redlock gives the lock up while at least --loss-margin of validity is left: it says"
          + " LOCK LOST on stderr with the cause (the nodes that stopped answering and their last"
          + " errors, a token gone from the nodes, or this process paused past the validity),"
          + " stops the command (SIGTERM, then SIGKILL after --kill-grace, shorter than the"
          + " margin) unless --no-kill-on-loss, and exits with 79.",
      "What remains: a lock whose key expired or was deleted on the nodes (redlock unlock"
          + " --force) is noticed at the next extension, up to --extend-every later, and the"
          + " command then runs for up to --kill-grace more (if the command ends first, the"
          + " release notices it: LOCK LOST and 79 all the same); a pause of this machine longer"
          + " than the margin (GC, SIGSTOP, a suspended VM) lets the command run past the"
          + " validity."
          + " Work that must never overlap the next holder's should use --fencing.",
      "A node that fails in a way no retry fixes (wrong password, missing table, unknown host)"
          + " makes exec exit with 78 at once, naming each node and cause (--strict, the"
          + " default); with --no-strict it is outvoted with one warning line. An even number of"
          + " nodes gets a warning, as doctor gives.",
      "On Linux the command and the processes it started die with redlock, even when redlock"
          + " is killed with SIGKILL or by the OOM killer: the command by setpriv --pdeathsig"
          + " (util-linux), its descendants by a watchdog (sh) that redlock starts first and"
          + " that, once redlock is gone, stops every process whose environment holds the"
          + " lease's REDLOCK_TOKEN (SIGTERM, SIGKILL after --kill-grace). Not covered: systems"
          + " other than Linux, Linux without setpriv, set-user-ID commands such as sudo,"
          + " processes that drop REDLOCK_TOKEN from their environment, and processes the"
          + " command leaves in the background when it ends on its own; these keep running"
          + " without the lock, and only --fencing protects the next holder.",
      "The command gets REDLOCK_LOCK_NAME, REDLOCK_TOKEN (the lease's random token, for"
          + " 'redlock extend' and 'redlock release'), REDLOCK_TTL_MS and, with --fencing,"
          + " REDLOCK_FENCING_TOKEN in its environment (see below), but not the nodes'"
          + " credentials: REDLOCK_NODES when it holds a password, and the variables that node"
          + " URIs refer to as $${VAR} where a password goes. Its exit code is passed through. On"
          + " Ctrl-C, SIGTERM or SIGHUP the command is stopped and the lock released. SIGQUIT"
          + " (Ctrl-\\) prints the JVM's thread dump on stderr, not into the standard output"
          + " the command shares, when run by the ./redlock launcher (-XX:+DisplayVMOutputToStderr;"
          + " add it yourself with java -jar).",
      "After the command, the lock is released; a node whose answer came late gets the release"
          + " again (for up to 2 s), and a node that still could not confirm is named (the key"
          + " there expires by its TTL). redlock gives up waiting for a busy lock within --wait"
          + " plus one node timeout and about half a second, however many nodes are down.",
      "Passwords: keep them out of ps with a config file only you can read (--config FILE,"
          + " nodes=...), or with $${VAR} references in the URIs, e.g."
          + " --nodes 'redis://:$${REDIS_PASSWORD}@a:6379' (single quotes: redlock expands it).",
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
  @Mixin ExecOptions o;

  /** Set when exec returns the command's own exit code. */
  private boolean commandCode;

  @Mixin NodeOptions nodeOptions;

  @Spec CommandSpec spec;

  /** With --no-wait: attempts in all when too few nodes answered (never when the lock is held). */
  static final int NO_WAIT_ATTEMPTS = 3;

  /** How long exit waits for the nodes to close; they close on their own as the process ends. */
  static final Duration CLOSE_WAIT = Duration.ofMillis(300);

  /**
   * Bounds of the time exit waits for late replies to the lease's calls before it releases again.
   */
  static final Duration LATE_WAIT_MIN = Duration.ofMillis(500);

  static final Duration LATE_WAIT_MAX = Duration.ofSeconds(2);

  private final PrintStream err = System.err;
  private final Object state = new Object();
  private final CountDownLatch mainDone = new CountDownLatch(1);
  private final AtomicBoolean cleanedUp = new AtomicBoolean();
  private final AtomicBoolean lost = new AtomicBoolean();

  /** Set when a signal arrived; guarded by {@link #state} together with {@link #child}. */
  private boolean stopping;

  private Process child;
  private volatile Lease lease;

  /**
   * Stops the command's processes if this JVM dies without doing so (SIGKILL, the OOM killer):
   * {@code setpriv --pdeathsig} takes the command itself, the watchdog everything it started.
   */
  private volatile Child.Watchdog watchdog;

  /** Set once {@link #terminate} was asked to stop the command (a signal, a loss). */
  private volatile boolean stopped;

  /** What the release found, once {@link #cleanup} released the lease. */
  private volatile ReleaseOutcome releaseOutcome;

  volatile Redlock redlock;
  private ExecLoss watch;
  private Duration margin;
  private Duration grace;

  @Override
  public Integer call() {
    ExecArguments.Checked checked = ExecArguments.check(this);
    List<String> argv = checked.argv();
    Duration maxWait = checked.maxWait();
    Duration interval = checked.interval();
    nodeOptions.quietLeaseLog();
    watch = new ExecLoss(o.lockName, err, nodeOptions.verbose());
    long started = System.nanoTime();
    NodeOptions.Selection selection = nodeOptions.selectHere(System.getenv(), err);
    this.selection = selection;
    List<NodeOptions.Requirement> requirements = new ArrayList<>();
    if (o.fencing) {
      requirements.add(NodeOptions.Requirement.FENCING);
    }
    if (o.quarantine != null) {
      requirements.add(NodeOptions.Requirement.STATUS);
    }
    redlock =
        nodeOptions.build(
            selection,
            b -> {
              b.maxExtensions(Integer.MAX_VALUE)
                  .fencing(o.fencing)
                  .strictNodes(o.strict)
                  .listener(watch);
              return o.quarantine == null ? b : b.restartQuarantine(o.quarantine);
            },
            requirements,
            // counted in the wait; a first lock call on a cold node (a table to create, a JIT that
            // has compiled nothing yet) can outlast the node timeout, and it is not the attempt's
            NodeOptions.WARM_UP_TIMEOUT);
    Verdict.nodeCount(redlock.nodes().size()).ifPresent(w -> err.println("redlock: warning: " + w));
    margin =
        o.lossMargin != null
            ? o.lossMargin
            : ExecArguments.defaultMargin(redlock.settings(), o.ttl);
    grace = o.killGrace != null ? o.killGrace : margin.dividedBy(2);
    watch.redlock = redlock;
    watch.margin = margin;
    if (grace.compareTo(margin) >= 0 && !o.noKillOnLoss) {
      err.println(
          "redlock: warning: --kill-grace ("
              + Durations.human(grace)
              + ") is not shorter than the loss margin ("
              + Durations.human(margin)
              + "): a command that ignores SIGTERM may still run for up to "
              + Durations.human(grace.minus(margin))
              + " after the lock's validity has ended");
    }
    // The warm-up counts against the wait: the tool gives up within --wait + one node timeout.
    Duration left = maxWait.minusNanos(System.nanoTime() - started);
    Thread main = Thread.currentThread();
    Thread hook = new Thread(() -> onSignal(main), "redlock-exec-signal");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      int code = run(argv, left.isNegative() ? Duration.ZERO : left, interval, selection);
      if (code == ExitCodes.LOST && !commandCode && o.lostExitCode != null) {
        return o.lostExitCode;
      }
      return code;
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

  /** The attempts {@link #acquire} made, and when the first began (nanoTime). */
  private int attempts;

  private long firstAttemptAt;

  /**
   * Acquires the lock. With --no-wait, an attempt that failed because too few nodes answered in
   * time is not "busy": if a node that missed it has answered before (it stalled for a moment, as
   * happens on a loaded machine), it is repeated a few times after the usual random pause before
   * giving up. Nodes that never answered (stopped, unreachable) are not waited for again.
   */
  Lease acquire(Duration maxWait) throws InterruptedException {
    firstAttemptAt = System.nanoTime();
    for (attempts = 1; ; attempts++) {
      try {
        return redlock.acquire(o.lockName, o.ttl, maxWait);
      } catch (LockTimeoutException e) {
        if (!o.noWait
            || attempts >= NO_WAIT_ATTEMPTS
            || classify(e) != Failure.UNREACHABLE
            || !answeredBefore(e.unreachableNodes())) {
          throw e;
        }
        if (nodeOptions.verbose()) {
          err.println("redlock: " + NodeUri.redact(e.getMessage()) + "; trying again");
        }
        RedlockSettings settings = redlock.settings();
        long min = settings.retryDelayMin().toNanos();
        long max = Math.max(min + 1, settings.retryDelayMax().toNanos());
        TimeUnit.NANOSECONDS.sleep(ThreadLocalRandom.current().nextLong(min, max));
      }
    }
  }

  /** Whether any of {@code nodes} has answered a call of this process (a late answer counts). */
  private boolean answeredBefore(List<String> nodes) {
    return redlock.health().stream()
        .anyMatch(h -> nodes.contains(h.node()) && h.sinceLastAnswer().isPresent());
  }

  /**
   * The failure's message, counting every attempt of {@link #acquire} and the time since the first
   * (the engine's own counts the last call only).
   */
  private String failureMessage(LockTimeoutException e) {
    String message = e.getMessage();
    if (attempts > 1) {
      long ms = (System.nanoTime() - firstAttemptAt) / 1_000_000;
      message =
          message
              .replaceFirst("within \\d+ ms", "within " + ms + " ms")
              .replace("(1 attempt)", "(" + attempts + " attempts)");
    }
    return message;
  }

  private int run(List<String> argv, Duration maxWait, Duration interval, NodeOptions.Selection s) {
    try {
      lease = acquire(maxWait);
    } catch (LockTimeoutException e) {
      Failure failure = classify(e);
      String what =
          switch (failure) {
            case BUSY -> "lock busy";
            case UNREACHABLE -> "nodes unreachable";
            case QUARANTINE -> "too few nodes may vote (restart quarantine)";
          };
      err.println(
          "redlock: " + what + ": " + Durations.humanize(NodeUri.redact(failureMessage(e))));
      if (e.getCause() instanceof RedlockNonTransientException cause) {
        err.println("redlock: cause: " + NodeUri.redact(cause.getMessage()));
      }
      if (failure == Failure.BUSY) {
        return o.conflictExitCode != null ? o.conflictExitCode : ExitCodes.BUSY;
      }
      return ExitCodes.UNREACHABLE;
    } catch (InterruptedException e) {
      return 130; // a signal cut the wait short; the hook reports it
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, e.getMessage(), e);
    }
    watch.lease = lease;
    watch.valid(lease);
    for (NodeFailure f : lease.failedNodes()) {
      if (!f.isTransient()) {
        // Only with --no-strict: strict nodes fail the acquisition instead (exit 78).
        err.printf(
            "redlock: warning: %s (no retry fixes this; the lock holds on the other nodes, but the"
                + " quorum tolerates one failure less until it is fixed)%n",
            NodeUri.redact(f.toString()));
      }
    }
    if (!lease.quarantinedNodes().isEmpty()) {
      // The lease holds on a majority of the other nodes; say why a granting node did not count.
      err.printf(
          "redlock: note: restart quarantine: the votes of %s did not count (restarted, or"
              + " started, without durable lock state less than %s ago)%n",
          String.join(", ", lease.quarantinedNodes()), Durations.human(o.quarantine));
    }
    if (nodeOptions.verbose()) {
      List<String> granted = lease.grantedNodes();
      err.printf(
          Locale.ROOT,
          "redlock: acquired '%s' on %d of %d nodes (%s), validity %s%s; running %s%n",
          o.lockName,
          granted.size(),
          redlock.nodes().size(),
          s.source(),
          Durations.format(lease.remainingValidity()),
          o.fencing ? ", fencing token " + lease.fencingToken() : "",
          argv);
      for (NodeFailure f : lease.failedNodes()) {
        err.println("redlock:   not granted: " + NodeUri.redact(f.toString()));
      }
      err.printf(
          "redlock: extending every %s; if that keeps failing, the lock is given up with %s of"
              + " validity left and the command %s%n",
          Durations.human(interval),
          Durations.human(margin),
          o.noKillOnLoss
              ? "is left running (--no-kill-on-loss)"
              : "gets SIGTERM, then SIGKILL after " + Durations.human(grace));
    }
    ProcessBuilder pb = new ProcessBuilder().inheritIO();
    Map<String, String> env = pb.environment();
    env.put("REDLOCK_LOCK_NAME", o.lockName);
    env.put("REDLOCK_TOKEN", lease.token());
    env.put("REDLOCK_TTL_MS", Long.toString(o.ttl.toMillis()));
    if (o.fencing) {
      env.put("REDLOCK_FENCING_TOKEN", Long.toString(lease.fencingToken()));
    } else {
      env.remove("REDLOCK_FENCING_TOKEN"); // not one inherited from an outer exec
    }
    s.credentialVariables().forEach(env::remove); // the nodes' secrets are not the command's
    channel = new ExecNested(this, lease, watch, r -> releaseOutcome = r).open(env, err);
    Optional<Child.Problem> problem = Child.check(argv.get(0), env.get("PATH"));
    if (problem.isPresent()) {
      err.printf(
          "redlock: cannot run '%s': %s (the lock was released)%n",
          argv.get(0), problem.get().message());
      return problem.get().exitCode();
    }
    List<String> full = new ArrayList<>(Child.dieWithParentPrefix(env.get("PATH")));
    full.addAll(argv);
    pb.command(full);
    // Kept alive by the library; its loss signal comes while the margin is left.
    try {
      lease.keepAlive(KeepAlive.defaults().every(interval).lostMargin(margin));
    } catch (IllegalStateException gone) {
      err.printf(
          "redlock: LOCK LOST: '%s': its validity ran out before the command could start (the"
              + " nodes are too slow for --ttl %s); the command was not started%n",
          o.lockName, Durations.human(o.ttl));
      return ExitCodes.LOST;
    }
    lease.onLost(this::onLost);
    Process started;
    synchronized (state) {
      if (stopping) {
        return 130;
      }
      if (lost.get()) {
        return ExitCodes.LOST; // lost before the command started: it never runs unlocked
      }
      // Before the command: whatever it starts is covered from its first moment.
      watchdog = Child.Watchdog.start(lease.token(), grace, env.get("PATH")).orElse(null);
      try {
        child = pb.start();
      } catch (IOException e) {
        disarmWatchdog();
        return Child.cannotStart(argv.get(0), e, err);
      }
      started = child;
    }
    int code = Child.waitFor(started);
    if (!stopped) {
      // It ended on its own: what it left in the background is not the watchdog's to stop. When
      // redlock stopped it (a signal, a loss), the watchdog stays armed and, as redlock exits,
      // stops any descendant that escaped terminate().
      disarmWatchdog();
    }
    if (lost.get()) {
      return ExitCodes.LOST;
    }
    // The release tells whether the nodes still held the token: a lock deleted while the command
    // ran (redlock unlock --force) is found here if no extension came in between to find it.
    Duration validity = lease.remainingValidity();
    cleanup();
    if (lost.get()) {
      return ExitCodes.LOST; // an extension found it first, and said so
    }
    ReleaseOutcome outcome = releaseOutcome;
    if (outcome != null
        && !validity.isZero()
        && ExecLoss.goneAtRelease(outcome, redlock.quorum())) {
      if (lost.compareAndSet(false, true)) {
        watch.reportGoneAtRelease(outcome, validity, code);
      }
      return ExitCodes.LOST;
    }
    commandCode = true;
    return code;
  }

  /** The nodes in use, as the channel hands them to nested commands. */
  NodeOptions.Selection selection;

  /** Where nested redlock commands reach this exec; closed by {@link #cleanup}. */
  private volatile ParentExec channel;

  private void disarmWatchdog() {
    Child.Watchdog w = watchdog;
    if (w != null) {
      w.disarm();
    }
  }

  /** The lease's loss signal, on a thread of the library's: report the cause, stop the command. */
  private void onLost(LeaseLost l) {
    if (!lost.compareAndSet(false, true)) {
      return;
    }
    Process c;
    synchronized (state) {
      c = child;
    }
    boolean kill = !o.noKillOnLoss && c != null;
    watch.report(l, c, kill, grace);
    if (kill) {
      // Not on the library's notifier thread: the grace may take a while.
      Thread t = new Thread(() -> terminate(c), "redlock-exec-stop");
      t.setDaemon(true);
      t.start();
    }
  }

  /** Stops the command: SIGTERM, SIGKILL after the grace (see {@link Child#terminate}). */
  private void terminate(Process command) {
    stopped = true;
    Child.terminate(command, grace != null ? grace : Duration.ofSeconds(10), err);
  }

  /** Called by the JVM on SIGTERM / SIGINT / SIGHUP: stop the command, release, then let go. */
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
            + o.lockName
            + "'");
    if (c != null) {
      terminate(c);
    } else {
      main.interrupt(); // cut a wait for the lock short
    }
    try {
      // The main thread releases once the command is gone; wait for it, within bounds.
      Duration g = grace != null ? grace : Duration.ofSeconds(10);
      if (!mainDone.await(g.toMillis() + 10_000, TimeUnit.MILLISECONDS)) {
        cleanup();
      }
    } catch (InterruptedException e) {
      cleanup();
    }
  }

  /**
   * Releases the lease (if any) and closes the nodes; once, from whichever thread comes first. The
   * release waits, within {@link #lateWait}, for the calls of the lease that were given up on: a
   * release cut short by the per-node timeout (on a loaded machine), or a grant that arrived late
   * and after the release, would otherwise stay on the node until its TTL ({@link
   * Lease#releaseAwaitingLate}). Closing is bounded by {@link #CLOSE_WAIT}: connections end with
   * the process anyway.
   */
  private void cleanup() {
    if (!cleanedUp.compareAndSet(false, true)) {
      return;
    }
    Lease l = lease;
    Redlock r = redlock;
    ParentExec c = channel;
    if (c != null) {
      c.close();
    }
    try {
      if (l != null) {
        releaseOutcome =
            l.release(); // what the nodes held: the token gone from a majority is a loss
        List<String> left = l.releaseAwaitingLate(lateWait(r)).failedNodes();
        if (!left.isEmpty()) {
          err.println(
              "redlock: warning: released '%s' on %d of %d nodes; on %s it expires by its TTL (%s)"
                  .formatted(
                      o.lockName,
                      r.nodes().size() - left.size(),
                      r.nodes().size(),
                      left,
                      Durations.human(o.ttl)));
        }
      }
    } catch (RuntimeException e) {
      err.println("redlock: warning: release of '" + o.lockName + "' failed: " + e.getMessage());
    } finally {
      if (r != null) {
        closeBounded(r);
      }
    }
  }

  /** How long exit waits for late replies: a few node timeouts, at least 0.5 s, at most 2 s. */
  private Duration lateWait(Redlock r) {
    Duration fourTimeouts = r.settings().nodeTimeoutFor(o.ttl).multipliedBy(4);
    return Collections.max(
        List.of(LATE_WAIT_MIN, Collections.min(List.of(fourTimeouts, LATE_WAIT_MAX))));
  }

  /** Closes the Redlock on a daemon thread, waiting at most {@link #CLOSE_WAIT}. */
  private void closeBounded(Redlock r) {
    Thread t = new Thread(r::close, "redlock-exec-close");
    t.setDaemon(true);
    t.start();
    try {
      t.join(CLOSE_WAIT.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
