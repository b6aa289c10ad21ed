package io.redlock.cli.internal;

import io.redlock.Lease;
import io.redlock.LeaseLostException;
import io.redlock.Redlock;
import io.redlock.RedlockListener;
import io.redlock.ReleaseOutcome;
import io.redlock.spi.LockNode;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code redlock extend} and {@code redlock release}: act on a lease another process holds, by its
 * token ({@link Redlock#resume}), e.g. the command run by exec, which gets the token as {@code
 * REDLOCK_TOKEN}.
 */
final class LeaseCommands {
  private LeaseCommands() {}

  /** The TTL a release sets on the way: if a node then misses the release, it expires soon. */
  static final Duration RELEASE_TTL = Duration.ofSeconds(5);

  /** What the nodes answered to the extensions of one command, by node. */
  static final class Answers implements RedlockListener {
    final Map<String, Outcome> byNode = new LinkedHashMap<>();

    @Override
    public synchronized void nodeCall(String node, String operation, Outcome outcome, long n) {
      if (operation.equals("extend")) {
        byNode.put(node, outcome);
      }
    }

    synchronized long count(Outcome outcome) {
      return byNode.values().stream().filter(o -> o == outcome).count();
    }

    synchronized List<String> failed() {
      List<String> out = new ArrayList<>();
      byNode.forEach(
          (node, outcome) -> {
            if (outcome != Outcome.YES && outcome != Outcome.NO) {
              out.add(node + " (" + outcome.name().toLowerCase(java.util.Locale.ROOT) + ")");
            }
          });
      return out;
    }
  }

  /** The options and the work extend and release share. */
  abstract static class ByToken implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "LOCKNAME", description = "The name of the lock.")
    String lockName;

    @Option(
        names = "--token",
        paramLabel = "TOKEN",
        description =
            "The lease's token, as exec gives it to its command in REDLOCK_TOKEN."
                + " Default: $REDLOCK_TOKEN (which keeps it out of ps).")
    String token;

    @Mixin NodeOptions nodeOptions;

    final PrintStream err = System.err;
    final Answers answers = new Answers();

    /** Checks LOCKNAME and finds the token: --token, else $REDLOCK_TOKEN. */
    void resolveToken() {
      if (lockName.isBlank()) {
        throw new CliException(ExitCodes.USAGE, "LOCKNAME must not be blank");
      }
      if (token == null) {
        token = System.getenv("REDLOCK_TOKEN");
      }
      if (token == null || token.isBlank()) {
        throw new CliException(
            ExitCodes.USAGE,
            "no token: give --token TOKEN, or run inside 'redlock exec', which sets"
                + " REDLOCK_TOKEN");
      }
    }

    /**
     * Inside 'redlock exec', for exec's own lease: exec does it ({@link ParentExec}); the exit
     * code, or empty.
     */
    java.util.Optional<Integer> byParent(String op, Duration ttl) {
      resolveToken();
      return ParentExec.ownLease(op, lockName, token, ttl, err);
    }

    Redlock open() {
      resolveToken();
      nodeOptions.quietLeaseLog();
      NodeOptions.Selection selection = nodeOptions.selectHere(System.getenv(), err);
      return nodeOptions.build(
          selection,
          b -> b.maxExtensions(Integer.MAX_VALUE).listener(answers),
          List.of(),
          NodeOptions.WARM_UP_MIN);
    }

    /** The exit code and message for a token that no majority confirmed. */
    int notHeld(Redlock redlock, LeaseLostException e, String doing) {
      long yes = answers.count(RedlockListener.Outcome.YES);
      long no = answers.count(RedlockListener.Outcome.NO);
      long misconfigured = answers.count(RedlockListener.Outcome.MISCONFIGURED);
      List<String> failed = answers.failed();
      if (no < redlock.quorum() && !failed.isEmpty()) {
        err.printf(
            "redlock: %s: could not %s '%s': %d of %d nodes confirmed its token, a quorum needs %d;"
                + " no answer from %s%n",
            misconfigured > 0 ? "nodes misconfigured" : "nodes unreachable",
            doing,
            lockName,
            yes,
            redlock.nodes().size(),
            redlock.quorum(),
            String.join(", ", failed));
        CliWords.nodeErrors(redlock).forEach(m -> err.println("redlock:   " + m));
        return misconfigured > 0 ? ExitCodes.CONFIG : ExitCodes.UNREACHABLE;
      }
      err.printf(
          "redlock: not held: '%s' is not held with this token by a majority of the nodes (%d of %d"
              + " answered that it is not): it was released, it expired, or the token is wrong%n",
          lockName, no, redlock.nodes().size());
      return ExitCodes.LOST;
    }
  }

  /** {@code redlock extend NAME --token T --ttl D}. */
  @Command(
      name = "extend",
      sortOptions = false,
      usageHelpAutoWidth = true,
      mixinStandardHelpOptions = true,
      description = {
        "Extends a lease held by another process, by its token: sets the lock's expiry to --ttl"
            + " from now on every node that still holds the token. For a command run by"
            + " 'redlock exec' that needs more time than exec's own renewal gives, or for a lease"
            + " whose holder passed its token on.",
        "Exits with 0 when a majority extended, 79 when the token no longer holds the lock"
            + " (released, expired, or a wrong token), 69 when too few nodes answered."
      },
      footer = {
        "",
        "Examples:",
        "  redlock extend nightly --ttl 10m                 # inside exec: uses $REDLOCK_TOKEN",
        "  redlock extend nightly --token \"$T\" --ttl 30s"
      })
  static final class Extend extends ByToken {
    @Option(
        names = "--ttl",
        required = true,
        converter = Durations.class,
        paramLabel = "DURATION",
        description = "The lock's new time to live, from now.")
    Duration ttl;

    @Override
    public Integer call() {
      Durations.requirePositive("--ttl", ttl);
      java.util.Optional<Integer> parent = byParent("extend", ttl);
      if (parent.isPresent()) {
        return parent.get();
      }
      Redlock redlock = open();
      try {
        Lease lease = redlock.resume(lockName, token, ttl);
        err.printf(
            "redlock: extended '%s' to %s on %d of %d nodes; valid for %s%n",
            lockName,
            Durations.human(ttl),
            answers.count(RedlockListener.Outcome.YES),
            redlock.nodes().size(),
            Durations.format(lease.remainingValidity()));
        return ExitCodes.OK;
      } catch (LeaseLostException e) {
        return notHeld(redlock, e, "extend");
      } finally {
        redlock.close();
      }
    }
  }

  /** {@code redlock release NAME --token T}. */
  @Command(
      name = "release",
      sortOptions = false,
      usageHelpAutoWidth = true,
      mixinStandardHelpOptions = true,
      description = {
        "Releases a lease held by another process, by its token: deletes the lock on every node"
            + " where it still holds the token. Never deletes another holder's lock.",
        "Exits with 0 when a majority held the token and the release was sent to every node, 79"
            + " when no majority held it (released or expired already, or a wrong token: what a"
            + " minority still held is deleted all the same), 69 when too few nodes answered."
      },
      footer = {
        "",
        "Examples:",
        "  redlock release nightly                          # inside exec: uses $REDLOCK_TOKEN",
        "  redlock release nightly --token \"$T\""
      })
  static final class Release extends ByToken {
    @Override
    public Integer call() {
      java.util.Optional<Integer> parent = byParent("release", null);
      if (parent.isPresent()) {
        return parent.get();
      }
      Redlock redlock = open();
      try {
        Lease lease;
        try {
          lease = redlock.resume(lockName, token, RELEASE_TTL);
        } catch (LeaseLostException e) {
          int code = notHeld(redlock, e, "release");
          int deleted = deleteEverywhere(redlock);
          if (deleted > 0) {
            err.printf(
                "redlock: deleted the key that still held this token on %d of %d nodes%n",
                deleted, redlock.nodes().size());
          }
          return code;
        }
        ReleaseOutcome outcome = lease.release();
        err.printf(
            "redlock: released '%s': deleted on %d of %d nodes%s%n",
            lockName,
            outcome.deleted(),
            outcome.nodes(),
            Verdict.list(
                "; no answer from ",
                outcome.failedNodes(),
                ", where it expires within " + Durations.human(RELEASE_TTL)));
        return ExitCodes.OK;
      } finally {
        redlock.close();
      }
    }

    /** Compare-and-delete on every node; how many deleted. */
    private int deleteEverywhere(Redlock redlock) {
      List<LockNode> nodes = nodeOptions.opened;
      return (int)
          NodeCalls.all(
                  nodes,
                  i -> nodes.get(i).release(lockName, token),
                  redlock.settings().nodeTimeoutFor(RELEASE_TTL))
              .stream()
              .filter(a -> Boolean.TRUE.equals(a.value()))
              .count();
    }
  }
}
