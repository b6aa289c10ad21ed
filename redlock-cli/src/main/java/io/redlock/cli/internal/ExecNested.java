package io.redlock.cli.internal;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.RedlockListener;
import io.redlock.ReleaseOutcome;
import io.redlock.spi.NodeUri;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * exec's side of the channel to the redlock commands its command runs ({@link ParentExec}): hands
 * them its nodes, and extends or releases its own lease for them, so that its renewal goes on with
 * what they asked.
 */
final class ExecNested {
  private final String lockName;
  private final Duration ttl;
  private final NodeOptions.Selection selection;
  private final NodeOptions nodeOptions;
  private final Lease lease;
  private final Redlock redlock;
  private final ExecLoss watch;
  private final Consumer<ReleaseOutcome> released;

  ExecNested(ExecCommand exec, Lease lease, ExecLoss watch, Consumer<ReleaseOutcome> released) {
    this.lockName = exec.lockName;
    this.ttl = exec.ttl;
    this.selection = exec.selection;
    this.nodeOptions = exec.nodeOptions;
    this.redlock = exec.redlock;
    this.lease = lease;
    this.watch = watch;
    this.released = released;
  }

  /** Answers a nested command (see {@link ParentExec}): on the channel's thread. */
  Map<String, List<String>> answer(Map<String, String> request) {
    Lease l = lease;
    Map<String, List<String>> a = new LinkedHashMap<>();
    if (l == null || !l.token().equals(request.get("auth"))) {
      a.put("refused", List.of("the request did not carry this exec's REDLOCK_TOKEN"));
      return a;
    }
    String op = String.valueOf(request.get("op"));
    if (op.equals("nodes")) {
      a.put("node", selection.uris());
      Duration t =
          nodeOptions.nodeTimeout != null ? nodeOptions.nodeTimeout : selection.nodeTimeout();
      if (t != null) {
        a.put("node-timeout-ms", List.of(Long.toString(Math.max(1, t.toMillis()))));
      }
      Double d =
          nodeOptions.driftFactor != null ? nodeOptions.driftFactor : selection.driftFactor();
      if (d != null) {
        a.put("drift-factor", List.of(d.toString()));
      }
      a.put("zero-setup", List.of(Boolean.toString(selection.zeroSetup())));
      a.put(
          "source",
          List.of("pid " + ProcessHandle.current().pid() + ", nodes from " + selection.source()));
      return a;
    }
    if (!lockName.equals(request.get("name"))) {
      return a; // not this exec's lease: the caller uses the nodes itself
    }
    if (op.equals("extend")) {
      return answerExtend(l, Duration.ofMillis(Long.parseLong(request.get("ttl-ms"))));
    }
    if (op.equals("release")) {
      return answerRelease(l);
    }
    a.put("refused", List.of("unknown request '" + op + "'"));
    return a;
  }

  /**
   * A nested {@code redlock extend} of this exec's lease: extended here, so that the keep-alive,
   * which renews with the TTL the lease was last extended with, goes on with it; never with less
   * than exec's own --ttl, which the renewal period was chosen for.
   */
  private Map<String, List<String>> answerExtend(Lease l, Duration asked) {
    Duration use = asked.compareTo(ttl) < 0 ? ttl : asked;
    boolean extended;
    try {
      extended = l.extend(use);
    } catch (IllegalStateException | IllegalArgumentException e) {
      return exit(
          ExitCodes.LOST,
          "redlock: not held: '"
              + lockName
              + "': the lease of the 'redlock exec' this runs under is no longer held ("
              + e.getMessage()
              + ")");
    }
    Map<RedlockListener.Outcome, Long> counts = watch.lastCounts();
    long yes = counts.getOrDefault(RedlockListener.Outcome.YES, 0L);
    long no = counts.getOrDefault(RedlockListener.Outcome.NO, 0L);
    int n = redlock.nodes().size();
    if (extended) {
      return exit(
          ExitCodes.OK,
          "redlock: extended '"
              + lockName
              + "' to "
              + Durations.human(use)
              + " on "
              + yes
              + " of "
              + n
              + " nodes; valid for "
              + Durations.format(l.remainingValidity())
              + (use.equals(asked)
                  ? ""
                  : " (asked for "
                      + Durations.human(asked)
                      + "; exec renews with at least its --ttl)"));
    }
    if (no >= redlock.quorum()) {
      return exit(
          ExitCodes.LOST,
          "redlock: not held: '"
              + lockName
              + "' is not held with this token by a majority of the nodes ("
              + no
              + " of "
              + n
              + " answered that it is not)");
    }
    return exit(
        ExitCodes.UNREACHABLE,
        "redlock: nodes unreachable: could not extend '"
            + lockName
            + "': "
            + yes
            + " of "
            + n
            + " nodes confirmed its token, a quorum needs "
            + redlock.quorum()
            + "; exec keeps renewing it with its previous TTL");
  }

  /** A nested {@code redlock release} of this exec's lease: released here; renewal stops. */
  private Map<String, List<String>> answerRelease(Lease l) {
    ReleaseOutcome o = l.release();
    released.accept(o);
    if (o.deleted() >= redlock.quorum()) {
      return exit(
          ExitCodes.OK,
          "redlock: released '"
              + lockName
              + "': deleted on "
              + o.deleted()
              + " of "
              + o.nodes()
              + " nodes"
              + (o.failedNodes().isEmpty()
                  ? ""
                  : "; no answer from "
                      + String.join(", ", o.failedNodes())
                      + ", where it expires by its TTL")
              + "; the command runs on without the lock");
    }
    if (o.answered() >= redlock.quorum()) {
      return exit(
          ExitCodes.LOST,
          "redlock: not held: '"
              + lockName
              + "' is not held with this token by a majority of the nodes ("
              + (o.answered() - o.deleted())
              + " of "
              + o.nodes()
              + " answered that it is not)");
    }
    return exit(
        ExitCodes.UNREACHABLE,
        "redlock: nodes unreachable: released '"
            + lockName
            + "' on "
            + o.deleted()
            + " of "
            + o.nodes()
            + " nodes only, a quorum needs "
            + redlock.quorum()
            + "; no answer from "
            + String.join(", ", o.failedNodes()));
  }

  private static Map<String, List<String>> exit(int code, String line) {
    Map<String, List<String>> a = new LinkedHashMap<>();
    a.put("exit", List.of(Integer.toString(code)));
    a.put("err", List.of(NodeUri.redact(line)));
    return a;
  }
}
