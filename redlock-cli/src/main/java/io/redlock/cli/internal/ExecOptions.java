package io.redlock.cli.internal;

import java.time.Duration;
import java.util.List;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * exec's own options and parameters, as picocli fills them in; {@link ExecArguments} checks them.
 */
final class ExecOptions {
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
          "How long to wait for the lock if it is busy ('forever' for no limit), counted from"
              + " when redlock starts to connect to the nodes (connecting and checking them is"
              + " part of it). redlock gives up within this plus one node timeout and about half a"
              + " second, however many nodes are down. Default: 10s.")
  String waitText;

  @Option(
      names = "--no-wait",
      description =
          "Do not wait for a busy lock: exit with 75 at once if another client holds it. (An"
              + " attempt that fails because too few nodes answered in time is repeated up to "
              + ExecCommand.NO_WAIT_ATTEMPTS
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
      names = "--strict",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description =
          "Refuse to run when a node fails in a way no retry fixes (a wrong password, a missing"
              + " table, an unknown host), even if the other nodes make a majority: exit 78"
              + " naming each node and cause. With --no-strict such a node is outvoted with a"
              + " warning, and the quorum tolerates one failure less until it is fixed."
              + " Default: on.")
  boolean strict;

  @Option(
      names = "--extend-every",
      converter = Durations.class,
      paramLabel = "DURATION",
      description = "How often to extend the lock while the command runs. Default: TTL/3.")
  Duration extendEvery;

  @Option(
      names = "--loss-margin",
      converter = Durations.class,
      paramLabel = "DURATION",
      description =
          "When extensions keep failing, give the lock up (and stop the command) while at least"
              + " this much validity is left. Default: a tenth of the TTL, at least two node"
              + " timeouts.")
  Duration lossMargin;

  @Option(
      names = "--no-kill-on-loss",
      description =
          "If the lock is lost, only report it and let the command finish"
              + " (the exit code is still 79).")
  boolean noKillOnLoss;

  @Option(
      names = "--kill-grace",
      converter = Durations.class,
      paramLabel = "DURATION",
      description =
          "How long a stopped command gets between SIGTERM and SIGKILL. Default: half the loss"
              + " margin (1.5s for a 30s TTL), so that a command that ignores SIGTERM is killed"
              + " before the lock's validity ends.")
  Duration killGrace;

  @Option(
      names = {"-E", "--conflict-exit-code"},
      paramLabel = "CODE",
      description =
          "Exit with CODE (0-255) instead of 75 when the lock is busy, as flock -E does: for a"
              + " command that may itself exit with 75.")
  Integer conflictExitCode;

  @Option(
      names = "--lost-exit-code",
      paramLabel = "CODE",
      description =
          "Exit with CODE (0-255) instead of 79 when the lock is lost: for a command that may itself"
              + " exit with 79.")
  Integer lostExitCode;

  @Option(
      names = {"-c", "--command"},
      paramLabel = "CMD",
      description =
          "Run CMD with 'sh -c', as flock -c does: redlock exec LOCKNAME -c 'CMD' or"
              + " redlock exec -c 'CMD' LOCKNAME; no other COMMAND then.")
  String shellCommand;

  @Parameters(index = "0", paramLabel = "LOCKNAME", description = "The name of the lock.")
  String lockName;

  @Parameters(
      index = "1..*",
      arity = "0..*",
      paramLabel = "COMMAND",
      description = "The command and its arguments, best after --.")
  List<String> command;
}
