package io.redlock.cli.internal;

import static io.redlock.NodeReport.Quarantine.ACTIVE;
import static io.redlock.NodeReport.Quarantine.NOT_APPLICABLE;
import static io.redlock.NodeReport.Quarantine.NOT_NEEDED;
import static io.redlock.NodeReport.Quarantine.OFF;
import static io.redlock.NodeReport.Quarantine.PASSED;
import static io.redlock.NodeReport.Quarantine.STATUS_UNREADABLE;
import static io.redlock.NodeReport.Quarantine.UNSUPPORTED;
import static io.redlock.cli.internal.Verdict.Level.FAIL;
import static io.redlock.cli.internal.Verdict.Level.INFO;
import static io.redlock.cli.internal.Verdict.Level.OK;
import static io.redlock.cli.internal.Verdict.Level.WARN;
import static io.redlock.cli.internal.Verdict.Topic.DURABILITY;
import static io.redlock.cli.internal.Verdict.Topic.QUARANTINE;
import static io.redlock.cli.internal.Verdict.Topic.QUARANTINE_SUPPORT;
import static io.redlock.cli.internal.Verdict.finding;

import io.redlock.NodeReport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The doctor's findings on durability and restarts (the Redis distributed-lock page, "Performance,
 * crash recovery and fsync"): a node that restarts without durable lock state forgets the locks it
 * granted, which restart quarantine covers; and where each node stands with respect to it.
 */
final class Restarts {
  private Restarts() {}

  /** --quarantine must be positive and at least --ttl, as the engine requires: say so up front. */
  static void check(Duration quarantine, Duration ttl) {
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
      throw CliException.usage(
          "--ttl (%s) is longer than --quarantine (%s): a node restarted without durable lock state"
              + " could vote again before this lock expired. Use a --ttl of at most %2$s, or raise"
              + " --quarantine to the longest TTL you use",
          Durations.human(ttl), Durations.human(quarantine));
    }
  }

  /**
   * Restart quarantine as configured.
   *
   * @param maxTtl the longest TTL in use (--quarantine)
   * @param votesAfter how long a non-durable node must have been up before its vote counts: the
   *     maximum TTL plus its drift allowance, as the engine computes it
   */
  record Quarantine(Duration maxTtl, Duration votesAfter) {}

  /**
   * A node's quarantine state, and for {@link NodeReport.Quarantine#ACTIVE} the time until it
   * votes.
   */
  record QuarantineView(NodeReport.Quarantine state, Duration left) {}

  /** Where {@code node} stands; {@code quarantine} null when it is off. */
  static QuarantineView quarantine(DoctorReport.NodeReport node, Quarantine quarantine) {
    boolean on = quarantine != null;
    if (!node.reachable()) {
      return new QuarantineView(NOT_APPLICABLE, null);
    } else if (Boolean.FALSE.equals(node.reportsStatus())) {
      return new QuarantineView(on ? UNSUPPORTED : NOT_APPLICABLE, null);
    } else if (node.durable() == null || node.uptime() == null) {
      return new QuarantineView(on ? STATUS_UNREADABLE : NOT_APPLICABLE, null);
    } else if (node.durable() || !on) {
      return new QuarantineView(node.durable() ? NOT_NEEDED : OFF, null);
    }
    Duration left = quarantine.votesAfter().minus(node.uptime());
    return left.isNegative() || left.isZero()
        ? new QuarantineView(PASSED, null)
        : new QuarantineView(ACTIVE, left);
  }

  /**
   * Durability and restarts (the Redis distributed-lock page, "Performance, crash recovery and
   * fsync"): a node that restarts without durable lock state forgets the locks it granted and could
   * help a second client to a majority, unless it stays out for the maximum TTL, which is what
   * restart quarantine does.
   */
  static void judge(
      List<Verdict.Finding> out,
      List<DoctorReport.NodeReport> nodes,
      Duration ttl,
      int quorum,
      Quarantine quarantine) {
    List<String> notDurable = new ArrayList<>();
    List<String> youngNotDurable = new ArrayList<>();
    List<String> unknown = new ArrayList<>();
    List<String> unsupported = new ArrayList<>();
    List<String> unreadable = new ArrayList<>();
    List<String> active = new ArrayList<>();
    List<Duration> activeLeft = new ArrayList<>();
    int reachable = 0;
    for (DoctorReport.NodeReport node : nodes) {
      if (!node.reachable()) {
        continue;
      }
      reachable++;
      if (Boolean.FALSE.equals(node.durable())) {
        notDurable.add(
            node.durability() == null
                ? node.node()
                : node.node() + " (" + node.durability().replaceFirst("^not durable: ", "") + ")");
        if (node.uptime() != null && node.uptime().compareTo(ttl) < 0) {
          youngNotDurable.add(node.node() + " (up " + Durations.format(node.uptime()) + ")");
        }
      }
      QuarantineView view = quarantine(node, quarantine);
      switch (view.state()) {
        case NOT_APPLICABLE -> {
          if (Boolean.FALSE.equals(node.reportsStatus())) {
            unknown.add(node.node());
          }
        }
        case UNSUPPORTED -> unsupported.add(node.node());
        case STATUS_UNREADABLE -> unreadable.add(node.node());
        case ACTIVE -> {
          active.add(node.node() + " (up " + Durations.format(node.uptime()) + ")");
          activeLeft.add(view.left());
        }
        default -> {
          // NOT_NEEDED, OFF, PASSED: nothing more to say per node
        }
      }
    }
    if (quarantine == null) {
      if (!notDurable.isEmpty()) {
        out.add(
            finding(
                WARN,
                DURABILITY,
                "not durable: %s. A node whose lock state is not durable forgets the locks it"
                    + " granted when it restarts, and could then help a second client to a"
                    + " majority. Make them durable (Redis: appendonly yes with appendfsync always;"
                    + " PostgreSQL: fsync and synchronous_commit on; SQLite: synchronous=FULL), or"
                    + " turn on restart quarantine (--quarantine MAXTTL here,"
                    + " RedlockBuilder.restartQuarantine(maxTtl) in code): a restarted node that is"
                    + " not durable then votes only once it has been up for the longest TTL in use,"
                    + " by when every lock it forgot has expired. Its cost: while a majority of"
                    + " nodes are in quarantine (after they restart, or when first deployed), no"
                    + " lock can be acquired",
                String.join(", ", notDurable)));
      }
      if (!youngNotDurable.isEmpty()) {
        out.add(
            finding(
                WARN,
                DURABILITY,
                "started or restarted less than one TTL ago, without durable lock state: %s. If"
                    + " they held locks before a restart, those may be granted again right now;"
                    + " restart quarantine would keep them out until they have been up for the"
                    + " maximum TTL",
                String.join(", ", youngNotDurable)));
      }
      if (!unknown.isEmpty()) {
        out.add(
            finding(
                INFO,
                DURABILITY,
                "durability and restarts unknown (the backend reports no status): %s; restart"
                    + " quarantine cannot watch these nodes",
                String.join(", ", unknown)));
      }
      return;
    }
    String wait = Durations.format(quarantine.votesAfter());
    if (!unsupported.isEmpty()) {
      out.add(
          finding(
              FAIL,
              QUARANTINE_SUPPORT,
              "--quarantine needs every node to report its status (incarnation, uptime,"
                  + " durability) so that a restart is noticed, but these do not: %s; exec"
                  + " --quarantine would refuse them (exit 64)",
              String.join(", ", unsupported)));
    }
    if (!unreadable.isEmpty()) {
      out.add(
          finding(
              WARN,
              QUARANTINE,
              "status could not be read, so under restart quarantine their votes do not count: %s",
              String.join(", ", unreadable)));
    }
    int voters = reachable - unsupported.size() - unreadable.size() - active.size();
    if (voters < quorum && reachable >= quorum && unsupported.isEmpty()) {
      activeLeft.sort(null);
      int needed = quorum - voters;
      out.add(
          finding(
              FAIL,
              QUARANTINE,
              "restart quarantine: only %d of %d nodes may vote now and a quorum needs %d, so no"
                  + " lock can be acquired (%s). Not durable and up for less than %s (the maximum"
                  + " TTL %s plus drift): %s. This is the price of safety after a restart: the"
                  + " locks such a node forgot may still be held elsewhere until then",
              voters,
              nodes.size(),
              quorum,
              needed <= activeLeft.size()
                  ? "in " + Durations.format(activeLeft.get(needed - 1)) + " at the earliest"
                  : "not until more nodes answer with a readable status",
              wait,
              Durations.format(quarantine.maxTtl()),
              String.join(", ", active)));
    } else if (!active.isEmpty()) {
      out.add(
          finding(
              WARN,
              QUARANTINE,
              "in restart quarantine (not durable and up for less than %s): %s; their votes do not"
                  + " count yet, locks work with the %d other nodes",
              wait,
              String.join(", ", active),
              voters));
    } else if (unsupported.isEmpty() && unreadable.isEmpty()) {
      out.add(
          notDurable.isEmpty()
              ? finding(
                  INFO,
                  QUARANTINE,
                  "restart quarantine is on but changes nothing here: every node is durable")
              : finding(
                  OK,
                  QUARANTINE,
                  "restart quarantine on for a maximum TTL of %s: every node that is not durable"
                      + " has been up for more than %s, so all votes count; after a restart, such"
                      + " a node votes again %s later",
                  Durations.format(quarantine.maxTtl()),
                  wait,
                  wait));
    }
    if (!notDurable.isEmpty()) {
      out.add(
          finding(
              INFO,
              DURABILITY,
              "not durable (restart quarantine covers them): %s",
              String.join(", ", notDurable)));
    }
  }
}
