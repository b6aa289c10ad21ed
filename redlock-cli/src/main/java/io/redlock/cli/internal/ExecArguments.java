package io.redlock.cli.internal;

import io.redlock.RedlockSettings;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * exec's command line, checked before any node is asked: the command to run (after LOCKNAME, or -c
 * CMD), how long to wait, how often to extend, and that the options fit together.
 */
final class ExecArguments {
  private ExecArguments() {}

  /** What exec runs with: the command, how long it waits for the lock, how often it extends. */
  record Checked(List<String> argv, Duration maxWait, Duration interval) {}

  static Checked check(ExecCommand x) {
    List<String> argv = command(x);
    if (x.o.lockName.isBlank()) {
      throw new CliException(
          ExitCodes.USAGE, "LOCKNAME must not be blank; name the lock, e.g. nightly-report");
    }
    Durations.requirePositive("--ttl", x.o.ttl);
    if (x.o.noWait && x.o.waitText != null) {
      throw new CliException(ExitCodes.USAGE, "--wait and --no-wait exclude each other");
    }
    Duration maxWait =
        x.o.noWait ? Duration.ZERO : parseWait(x.o.waitText == null ? "10s" : x.o.waitText);
    if (x.o.extendEvery != null) {
      Durations.requirePositive("--extend-every", x.o.extendEvery);
    }
    Duration interval = x.o.extendEvery != null ? x.o.extendEvery : x.o.ttl.dividedBy(3);
    shorterThanTtl(x, "--extend-every", interval, "a third");
    if (x.o.lossMargin != null) {
      Durations.requirePositive("--loss-margin", x.o.lossMargin);
      shorterThanTtl(x, "--loss-margin", x.o.lossMargin, "a tenth");
    }
    if (x.o.killGrace != null && x.o.killGrace.isNegative()) {
      throw CliException.usage(
          "--kill-grace must not be negative, got %s", Durations.human(x.o.killGrace));
    }
    Restarts.check(x.o.quarantine, x.o.ttl);
    checkExitCode("--conflict-exit-code", x.o.conflictExitCode);
    checkExitCode("--lost-exit-code", x.o.lostExitCode);
    return new Checked(argv, maxWait, interval);
  }

  /** The command after LOCKNAME, without the "--" before it; -c CMD as sh -c CMD. */
  private static List<String> command(ExecCommand x) {
    List<String> argv = x.o.command == null ? List.of() : x.o.command;
    if ((argv.isEmpty() || !argv.get(0).equals("--")) && dashDashBeforeLockName(x, argv)) {
      // "exec -- echo ran": picocli took "--" as the end of the options, and echo as LOCKNAME
      throw new CliException(
          ExitCodes.USAGE,
          "no LOCKNAME before '--': '"
              + x.o.lockName
              + "' would be taken as the lock's name; write: redlock exec [OPTIONS] LOCKNAME --"
              + " COMMAND [ARGS...]");
    }
    if (!argv.isEmpty() && (argv.get(0).equals("-c") || argv.get(0).equals("--command"))) {
      // flock's form: redlock exec LOCKNAME -c 'CMD'
      if (argv.size() != 2 || x.o.shellCommand != null) {
        throw new CliException(
            ExitCodes.USAGE,
            "-c takes one argument, the whole shell command, and no COMMAND besides it; quote it:"
                + " redlock exec LOCKNAME -c 'CMD ARGS...'");
      }
      return List.of("sh", "-c", argv.get(1));
    }
    if (!argv.isEmpty() && argv.get(0).startsWith("-") && !argv.get(0).equals("--")) {
      String option = argv.get(0).split("=", 2)[0];
      if (x.spec.findOption(option) != null) {
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
    if (x.o.shellCommand != null) {
      if (!argv.isEmpty()) {
        throw new CliException(
            ExitCodes.USAGE,
            "-c 'CMD' and a COMMAND exclude each other; give one: redlock exec -c 'CMD' LOCKNAME");
      }
      return List.of("sh", "-c", x.o.shellCommand);
    }
    if (argv.isEmpty()) {
      throw new CliException(
          ExitCodes.USAGE,
          "Missing required parameter: 'COMMAND'; write: redlock exec LOCKNAME -- COMMAND"
              + " [ARGS...]");
    }
    return argv;
  }

  /**
   * Whether "--" came right before LOCKNAME on the command line. After LOCKNAME, picocli stops at
   * the first positional and keeps the rest as given, so the command is the tail of the arguments
   * and LOCKNAME the one before it.
   */
  private static boolean dashDashBeforeLockName(ExecCommand x, List<String> argv) {
    List<String> all = x.spec.commandLine().getParseResult().originalArgs();
    int lockAt = all.size() - argv.size() - 1;
    return lockAt >= 1 && all.get(lockAt).equals(x.o.lockName) && all.get(lockAt - 1).equals("--");
  }

  private static void shorterThanTtl(ExecCommand x, String option, Duration value, String share) {
    if (value.compareTo(x.o.ttl) >= 0) {
      throw CliException.usage(
          "%s (%s) must be shorter than --ttl (%s), e.g. %s of it",
          option, Durations.human(value), Durations.human(x.o.ttl), share);
    }
  }

  /** An exit code given on the command line must be one a process can exit with. */
  private static void checkExitCode(String option, Integer code) {
    if (code != null && (code < 0 || code > 255)) {
      throw CliException.usage("%s must be an exit code from 0 to 255, got %d", option, code);
    }
  }

  private static Duration parseWait(String text) {
    String t = text.strip().toLowerCase(Locale.ROOT);
    if (t.equals("forever") || t.equals("infinite") || t.equals("inf")) {
      return Duration.ofDays(365L * 1000);
    }
    Duration d;
    try {
      d = Durations.parse(text);
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, "--wait: " + e.getMessage(), e);
    }
    if (d.isNegative()) {
      throw new CliException(
          ExitCodes.USAGE,
          "--wait must be positive, got "
              + Durations.human(d)
              + " (--no-wait, or --wait 0s, makes a single attempt)");
    }
    return d;
  }

  /**
   * The keep-alive's default margin, as {@link KeepAlive#lostMargin()} documents it: a tenth of the
   * TTL, at least two node timeouts; stated here so that the default grace can be half of it.
   */
  static Duration defaultMargin(RedlockSettings settings, Duration ttl) {
    Duration nodeTimeout = settings.nodeTimeoutFor(ttl);
    if (nodeTimeout.compareTo(ttl) > 0) {
      nodeTimeout = ttl;
    }
    Duration tenth = ttl.dividedBy(10);
    Duration twoTimeouts = nodeTimeout.multipliedBy(2);
    Duration m = tenth.compareTo(twoTimeouts) >= 0 ? tenth : twoTimeouts;
    return m.compareTo(ttl) < 0 ? m : ttl.dividedBy(2);
  }
}
