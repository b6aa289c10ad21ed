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
    this.lockName = exec.o.lockName;
    this.ttl = exec.o.ttl;
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
          "redlock: not held: '%s': the lease of the 'redlock exec' this runs under is no longer"
              + " held (%s)",
          lockName,
          e.getMessage());
    }
    Map<RedlockListener.Outcome, Long> counts = watch.lastCounts();
    long yes = counts.getOrDefault(RedlockListener.Outcome.YES, 0L);
    long no = counts.getOrDefault(RedlockListener.Outcome.NO, 0L);
    int n = redlock.nodes().size();
    if (extended) {
      return exit(
          ExitCodes.OK,
          "redlock: extended '%s' to %s on %d of %d nodes; valid for %s%s",
          lockName,
          Durations.human(use),
          yes,
          n,
          Durations.format(l.remainingValidity()),
          use.equals(asked)
              ? ""
              : " (asked for " + Durations.human(asked) + "; exec renews with at least its --ttl)");
    }
    if (no >= redlock.quorum()) {
      return notHeld(no, n);
    }
    return exit(
        ExitCodes.UNREACHABLE,
        "redlock: nodes unreachable: could not extend '%s': %d of %d nodes confirmed its token, a"
            + " quorum needs %d; exec keeps renewing it with its previous TTL",
        lockName,
        yes,
        n,
        redlock.quorum());
  }

  /** A nested {@code redlock release} of this exec's lease: released here; renewal stops. */
  private Map<String, List<String>> answerRelease(Lease l) {
    ReleaseOutcome o = l.release();
    released.accept(o);
    if (o.deleted() >= redlock.quorum()) {
      return exit(
          ExitCodes.OK,
          "redlock: released '%s': deleted on %d of %d nodes%s; the command runs on without the"
              + " lock",
          lockName,
          o.deleted(),
          o.nodes(),
          o.failedNodes().isEmpty()
              ? ""
              : "; no answer from "
                  + String.join(", ", o.failedNodes())
                  + ", where it expires by its TTL");
    }
    if (o.answered() >= redlock.quorum()) {
      return notHeld(o.answered() - o.deleted(), o.nodes());
    }
    return exit(
        ExitCodes.UNREACHABLE,
        "redlock: nodes unreachable: released '%s' on %d of %d nodes only, a quorum needs %d; no"
            + " answer from %s",
        lockName,
        o.deleted(),
        o.nodes(),
        redlock.quorum(),
        String.join(", ", o.failedNodes()));
  }

  private Map<String, List<String>> notHeld(long no, int n) {
    return exit(
        ExitCodes.LOST,
        "redlock: not held: '%s' is not held with this token by a majority of the nodes (%d of %d"
            + " answered that it is not)",
        lockName,
        no,
        n);
  }

  private static Map<String, List<String>> exit(int code, String format, Object... args) {
    Map<String, List<String>> a = new LinkedHashMap<>();
    a.put("exit", List.of(Integer.toString(code)));
    a.put("err", List.of(NodeUri.redact(format.formatted(args))));
    return a;
  }

  /**
   * Opens the channel for the redlock commands the command runs and names it in the command's
   * environment. If it cannot be opened, the variable names a socket that does not exist, so that
   * those commands refuse to run rather than use other nodes; null then.
   */
  ParentExec open(Map<String, String> env, java.io.PrintStream err) {
    try {
      ParentExec channel = ParentExec.listen(this::answer);
      env.put(ParentExec.ENV, channel.socket().toString());
      return channel;
    } catch (java.io.IOException | RuntimeException e) {
      err.println(
          "redlock: warning: no channel for redlock commands run by the command ("
              + e
              + "): redlock extend, release and status inside it need --nodes or --config");
      env.put(ParentExec.ENV, "/nonexistent/redlock-exec-channel-unavailable");
      return null;
    }
  }
}
