package io.redlock.cli.internal;

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

  /**
   * Restart quarantine as configured.
   *
   * @param maxTtl the longest TTL in use (--quarantine)
   * @param votesAfter how long a non-durable node must have been up before its vote counts: the
   *     maximum TTL plus its drift allowance, as the engine computes it
   */
  record Quarantine(Duration maxTtl, Duration votesAfter) {}

  /** Where a node stands with respect to restart quarantine; the JSON's "quarantine" values. */
  enum QuarantineState {
    /** Unreachable, or quarantine off and no status to judge by. */
    NOT_APPLICABLE("n/a"),
    /** Durable: a restart forgets nothing, so the node votes at once. */
    NOT_NEEDED("not-needed"),
    /** Not durable, and quarantine is off: a restart could grant a forgotten lock again. */
    OFF("off"),
    /** Not durable, up for longer than the quarantine: votes. */
    PASSED("passed"),
    /** Not durable, up for less than the quarantine: does not vote yet. */
    ACTIVE("active"),
    /** Quarantine on, but the node's status could not be read: its vote does not count. */
    STATUS_UNREADABLE("status-unreadable"),
    /** Quarantine on, but the node does not report a status: exec would refuse it. */
    UNSUPPORTED("unsupported");

    final String json;

    QuarantineState(String json) {
      this.json = json;
    }
  }

  /** A node's quarantine state, and for {@link QuarantineState#ACTIVE} the time until it votes. */
  record QuarantineView(QuarantineState state, Duration left) {}

  /** Where {@code node} stands; {@code quarantine} null when it is off. */
  static QuarantineView quarantine(Verdict.NodeFacts node, Quarantine quarantine) {
    if (!node.reachable()) {
      return new QuarantineView(QuarantineState.NOT_APPLICABLE, null);
    }
    if (Boolean.FALSE.equals(node.reportsStatus())) {
      return new QuarantineView(
          quarantine == null ? QuarantineState.NOT_APPLICABLE : QuarantineState.UNSUPPORTED, null);
    }
    if (node.durable() == null || node.uptime() == null) {
      return new QuarantineView(
          quarantine == null ? QuarantineState.NOT_APPLICABLE : QuarantineState.STATUS_UNREADABLE,
          null);
    }
    if (node.durable()) {
      return new QuarantineView(QuarantineState.NOT_NEEDED, null);
    }
    if (quarantine == null) {
      return new QuarantineView(QuarantineState.OFF, null);
    }
    Duration left = quarantine.votesAfter().minus(node.uptime());
    return left.isNegative() || left.isZero()
        ? new QuarantineView(QuarantineState.PASSED, null)
        : new QuarantineView(QuarantineState.ACTIVE, left);
  }

  /**
   * Durability and restarts (the Redis distributed-lock page, "Performance, crash recovery and
   * fsync"): a node that restarts without durable lock state forgets the locks it granted and could
   * help a second client to a majority, unless it stays out for the maximum TTL, which is what
   * restart quarantine does.
   */
  static void judge(
      List<Verdict.Finding> out,
      List<Verdict.NodeFacts> nodes,
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
    for (Verdict.NodeFacts node : nodes) {
      if (!node.reachable()) {
        continue;
      }
      reachable++;
      if (Boolean.FALSE.equals(node.durable())) {
        notDurable.add(
            node.durability() == null
                ? node.name()
                : node.name() + " (" + node.durability().replaceFirst("^not durable: ", "") + ")");
        if (node.uptime() != null && node.uptime().compareTo(ttl) < 0) {
          youngNotDurable.add(node.name() + " (up " + Durations.format(node.uptime()) + ")");
        }
      }
      QuarantineView view = quarantine(node, quarantine);
      switch (view.state()) {
        case NOT_APPLICABLE -> {
          if (Boolean.FALSE.equals(node.reportsStatus())) {
            unknown.add(node.name());
          }
        }
        case UNSUPPORTED -> unsupported.add(node.name());
        case STATUS_UNREADABLE -> unreadable.add(node.name());
        case ACTIVE -> {
          active.add(node.name() + " (up " + Durations.format(node.uptime()) + ")");
          activeLeft.add(view.left());
        }
        default -> {
          // NOT_NEEDED, OFF, PASSED: nothing more to say per node
        }
      }
    }
    String why =
        "A node whose lock state is not durable forgets the locks it granted when it restarts, and"
            + " could then help a second client to a majority.";
    if (quarantine == null) {
      if (!notDurable.isEmpty()) {
        out.add(
            new Verdict.Finding(
                Verdict.Level.WARN,
                Verdict.Topic.DURABILITY,
                "not durable: "
                    + String.join(", ", notDurable)
                    + ". "
                    + why
                    + " Make them durable (Redis: appendonly yes with appendfsync always;"
                    + " PostgreSQL: fsync and synchronous_commit on; SQLite: synchronous=FULL), or"
                    + " turn on restart quarantine (--quarantine MAXTTL here,"
                    + " RedlockBuilder.restartQuarantine(maxTtl) in code): a restarted node that is"
                    + " not durable then votes only once it has been up for the longest TTL in use,"
                    + " by when every lock it forgot has expired. Its cost: while a majority of"
                    + " nodes are in quarantine (after they restart, or when first deployed), no"
                    + " lock can be acquired"));
      }
      if (!youngNotDurable.isEmpty()) {
        out.add(
            new Verdict.Finding(
                Verdict.Level.WARN,
                Verdict.Topic.DURABILITY,
                "started or restarted less than one TTL ago, without durable lock state: "
                    + String.join(", ", youngNotDurable)
                    + ". If they held locks before a restart, those may be granted again right"
                    + " now; restart quarantine would keep them out until they have been up for"
                    + " the maximum TTL"));
      }
      if (!unknown.isEmpty()) {
        out.add(
            new Verdict.Finding(
                Verdict.Level.INFO,
                Verdict.Topic.DURABILITY,
                "durability and restarts unknown (the backend reports no status): "
                    + String.join(", ", unknown)
                    + "; restart quarantine cannot watch these nodes"));
      }
      return;
    }
    String wait = Durations.format(quarantine.votesAfter());
    if (!unsupported.isEmpty()) {
      out.add(
          new Verdict.Finding(
              Verdict.Level.FAIL,
              Verdict.Topic.QUARANTINE_SUPPORT,
              "--quarantine needs every node to report its status (incarnation, uptime,"
                  + " durability) so that a restart is noticed, but these do not: "
                  + String.join(", ", unsupported)
                  + "; exec --quarantine would refuse them (exit 64)"));
    }
    if (!unreadable.isEmpty()) {
      out.add(
          new Verdict.Finding(
              Verdict.Level.WARN,
              Verdict.Topic.QUARANTINE,
              "status could not be read, so under restart quarantine their votes do not count: "
                  + String.join(", ", unreadable)));
    }
    int voters = reachable - unsupported.size() - unreadable.size() - active.size();
    if (voters < quorum && reachable >= quorum && unsupported.isEmpty()) {
      activeLeft.sort(null);
      int needed = quorum - voters;
      String when =
          needed <= activeLeft.size()
              ? "in " + Durations.format(activeLeft.get(needed - 1)) + " at the earliest"
              : "not until more nodes answer with a readable status";
      out.add(
          new Verdict.Finding(
              Verdict.Level.FAIL,
              Verdict.Topic.QUARANTINE,
              "restart quarantine: only "
                  + voters
                  + " of "
                  + nodes.size()
                  + " nodes may vote now and a quorum needs "
                  + quorum
                  + ", so no lock can be acquired ("
                  + when
                  + "). Not durable and up for less than "
                  + wait
                  + " (the maximum TTL "
                  + Durations.format(quarantine.maxTtl())
                  + " plus drift): "
                  + String.join(", ", active)
                  + ". This is the price of safety after a restart: the locks such a node forgot"
                  + " may still be held elsewhere until then"));
    } else if (!active.isEmpty()) {
      out.add(
          new Verdict.Finding(
              Verdict.Level.WARN,
              Verdict.Topic.QUARANTINE,
              "in restart quarantine (not durable and up for less than "
                  + wait
                  + "): "
                  + String.join(", ", active)
                  + "; their votes do not count yet, locks work with the "
                  + voters
                  + " other nodes"));
    } else if (unsupported.isEmpty() && unreadable.isEmpty()) {
      out.add(
          new Verdict.Finding(
              notDurable.isEmpty() ? Verdict.Level.INFO : Verdict.Level.OK,
              Verdict.Topic.QUARANTINE,
              notDurable.isEmpty()
                  ? "restart quarantine is on but changes nothing here: every node is durable"
                  : "restart quarantine on for a maximum TTL of "
                      + Durations.format(quarantine.maxTtl())
                      + ": every node that is not durable has been up for more than "
                      + wait
                      + ", so all votes count; after a restart, such a node votes again "
                      + wait
                      + " later"));
    }
    if (!notDurable.isEmpty()) {
      out.add(
          new Verdict.Finding(
              Verdict.Level.INFO,
              Verdict.Topic.DURABILITY,
              "not durable (restart quarantine covers them): " + String.join(", ", notDurable)));
    }
  }
}
