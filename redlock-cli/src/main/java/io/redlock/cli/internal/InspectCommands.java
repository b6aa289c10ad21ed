package io.redlock.cli.internal;

import io.redlock.Redlock;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import io.redlock.spi.Reply;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code redlock status NAME} and {@code redlock unlock --force NAME}: for operators, who holds a
 * lock on each node ({@link LockNode#inspect}), and deleting it whoever holds it.
 */
final class InspectCommands {
  private InspectCommands() {}

  /**
   * How much of a token status and unlock show: enough to tell holders apart, too little to use.
   */
  static final int TOKEN_PREFIX = 8;

  /** What one node said about the key. */
  record NodeState(String node, Optional<KeyHolder> holder, String error) {
    boolean answered() {
      return error == null;
    }
  }

  /** The options and the reading of every node that status and unlock share. */
  abstract static class Inspecting implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "LOCKNAME", description = "The name of the lock.")
    String lockName;

    @Option(
        names = "--timeout",
        defaultValue = "2s",
        converter = Durations.class,
        paramLabel = "DURATION",
        description = "How long to wait for the nodes. Default: ${DEFAULT-VALUE}.")
    Duration timeout;

    @Mixin NodeOptions nodeOptions;

    final PrintStream out = System.out;
    final PrintStream err = System.err;

    Redlock open() {
      if (lockName.isBlank()) {
        throw new CliException(ExitCodes.USAGE, "LOCKNAME must not be blank");
      }
      Durations.requirePositive("--timeout", timeout);
      NodeOptions.Selection selection = nodeOptions.selectHere(System.getenv(), err);
      return nodeOptions.build(selection, b -> b, List.of(), NodeOptions.WARM_UP_MIN);
    }

    /**
     * Every node's holder of the key, in node order, read at once and awaited within the timeout.
     */
    List<NodeState> inspectAll() {
      List<LockNode> nodes = nodeOptions.opened;
      List<NodeState> states = new ArrayList<>();
      for (NodeCalls.Answer<Optional<KeyHolder>> a :
          NodeCalls.all(nodes, i -> inspect(nodes.get(i)), timeout)) {
        states.add(new NodeState(a.node(), a.answered() ? a.value() : Optional.empty(), a.error()));
      }
      return states;
    }

    private Reply<Optional<KeyHolder>> inspect(LockNode node) {
      if (!node.capabilities().inspection()) {
        throw new UnsupportedOperationException(
            "cannot look up a key's holder (the backend's capabilities().inspection() is false)");
      }
      return node.inspect(lockName);
    }

    static String prefix(String token) {
      return token.length() <= TOKEN_PREFIX ? token : token.substring(0, TOKEN_PREFIX) + "…";
    }
  }

  /** {@code redlock status NAME}. */
  @Command(
      name = "status",
      sortOptions = false,
      usageHelpAutoWidth = true,
      mixinStandardHelpOptions = true,
      description = {
        "Shows who holds the lock LOCKNAME on each node, and for how long: the holder's token"
            + " (its first "
            + TOKEN_PREFIX
            + " characters only) and the time left before the key expires on that node, by the"
            + " node's clock. Then whether a majority holds it, and until when at the latest.",
        "Exits with 0 whether the lock is held or free, 69 when too few nodes answered to tell."
      },
      footer = {"", "Examples:", "  redlock status nightly"})
  static final class Status extends Inspecting {
    @Override
    public Integer call() {
      try (Redlock redlock = open()) {
        List<NodeState> states = inspectAll();
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"NODE", "HOLDER", "EXPIRES IN"});
        Map<String, List<Duration>> byToken = new LinkedHashMap<>();
        int answered = 0;
        for (NodeState s : states) {
          if (!s.answered()) {
            rows.add(new String[] {s.node(), "?", s.error()});
            continue;
          }
          answered++;
          if (s.holder().isEmpty()) {
            rows.add(new String[] {s.node(), "free", "-"});
          } else {
            KeyHolder h = s.holder().get();
            rows.add(
                new String[] {s.node(), prefix(h.token()), Durations.format(h.remainingTtl())});
            byToken.computeIfAbsent(h.token(), k -> new ArrayList<>()).add(h.remainingTtl());
          }
        }
        DoctorReport.printColumns(out, rows);
        int quorum = redlock.quorum();
        int n = states.size();
        String verdict = null;
        for (Map.Entry<String, List<Duration>> e : byToken.entrySet()) {
          List<Duration> ttls = new ArrayList<>(e.getValue());
          if (ttls.size() >= quorum) {
            ttls.sort(Comparator.reverseOrder());
            verdict =
                "'%s' is HELD by %s on %d of %d nodes (a quorum needs %d), for at most another %s"
                        .formatted(
                            lockName,
                            prefix(e.getKey()),
                            ttls.size(),
                            n,
                            quorum,
                            Durations.format(ttls.get(quorum - 1)))
                    + " unless its holder extends it";
          }
        }
        if (verdict == null) {
          if (answered < quorum) {
            err.printf(
                "redlock: only %d of %d nodes answered, a quorum needs %d: cannot tell whether '%s'"
                    + " is held%n",
                answered, n, quorum, lockName);
            return ExitCodes.UNREACHABLE;
          }
          int held = byToken.values().stream().mapToInt(List::size).sum();
          verdict =
              "'%s' is FREE: no holder has a quorum of %d of %d nodes%s"
                  .formatted(
                      lockName,
                      quorum,
                      n,
                      held == 0
                          ? ""
                          : " (keys left on %d node%s expire on their own, or go with 'redlock"
                                  .formatted(held, held == 1 ? "" : "s")
                              + " unlock --force')");
        }
        out.println();
        out.println(verdict);
        return ExitCodes.OK;
      }
    }
  }

  /** {@code redlock unlock --force NAME}. */
  @Command(
      name = "unlock",
      sortOptions = false,
      usageHelpAutoWidth = true,
      mixinStandardHelpOptions = true,
      description = {
        "For operators: deletes the lock LOCKNAME on every node, whoever holds it, and says what"
            + " it deleted (node, the holder's token prefix, the time that was left). The holder"
            + " is not told: if it still runs, it will find its lock gone at its next extension"
            + " ('redlock exec' then stops its command with LOCK LOST, exit 79), and until then it"
            + " may work alongside the next holder. Needs --force.",
        "Each key is deleted only if it still holds the token that was read, so a holder that"
            + " took the lock in between is left alone.",
        "Exits with 0 when every node answered, 69 when some did not (their keys expire on their"
            + " own)."
      },
      footer = {"", "Examples:", "  redlock unlock --force nightly"})
  static final class Unlock extends Inspecting {
    @Option(
        names = "--force",
        description = "Required: confirms that the lock is to be deleted whoever holds it.")
    boolean force;

    @Override
    public Integer call() {
      if (!force) {
        throw new CliException(
            ExitCodes.USAGE,
            "unlock deletes the lock whoever holds it, and its holder may still be running; add"
                + " --force to do it (see 'redlock status "
                + lockName
                + "' first)");
      }
      try (Redlock redlock = open()) {
        List<NodeState> states = inspectAll();
        List<LockNode> nodes = nodeOptions.opened;
        List<NodeCalls.Answer<Boolean>> deletes =
            NodeCalls.all(
                nodes,
                i ->
                    states.get(i).answered() && states.get(i).holder().isPresent()
                        ? nodes.get(i).release(lockName, states.get(i).holder().get().token())
                        : null,
                timeout);
        int deleted = 0;
        int failed = 0;
        for (int i = 0; i < nodes.size(); i++) {
          NodeState s = states.get(i);
          NodeCalls.Answer<Boolean> d = deletes.get(i);
          if (!s.answered()) {
            failed++;
            err.println("redlock: " + s.node() + ": not deleted: " + s.error());
            continue;
          }
          if (!d.asked()) {
            continue; // free on this node
          }
          KeyHolder h = s.holder().get();
          String what = "(token " + prefix(h.token()) + ", " + Durations.format(h.remainingTtl());
          if (!d.answered()) {
            failed++;
            err.println("redlock: " + s.node() + ": not deleted " + what + " left): " + d.error());
          } else if (Boolean.TRUE.equals(d.value())) {
            deleted++;
            out.println("deleted '" + lockName + "' on " + s.node() + " " + what + " left)");
          } else {
            out.printf(
                "not deleted on %s: its holder changed or it expired meanwhile %s left when read)%n",
                s.node(), what);
          }
        }
        out.println(
            deleted == 0 && failed == 0
                ? "'" + lockName + "' was not held on any node: nothing deleted"
                : "deleted '" + lockName + "' on " + deleted + " of " + nodes.size() + " nodes");
        return failed == 0 ? ExitCodes.OK : ExitCodes.UNREACHABLE;
      }
    }
  }
}
