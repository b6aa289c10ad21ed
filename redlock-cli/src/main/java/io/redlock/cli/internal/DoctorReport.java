package io.redlock.cli.internal;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What {@code redlock doctor} reports: the JSON's records, and the table printed without --json.
 */
final class DoctorReport {
  private DoctorReport() {}

  /** The report's fields that come from each optional capability, for "notAvailable". */
  static final List<String> STATUS_FIELDS =
      List.of("serverVersion", "incarnation", "uptimeSeconds", "durable", "details");

  static final List<String> CLOCK_FIELDS = List.of("clockOffsetMs", "clockOffsetUncertaintyMs");

  /**
   * The settings judged.
   *
   * @param restartQuarantineMs --quarantine, or null when off
   * @param quarantineWaitMs how long a node that is not durable must have been up to vote (the
   *     maximum TTL plus its drift allowance), or null when off
   */
  record Settings(
      String nodesFrom,
      boolean zeroSetup,
      int nodes,
      int quorum,
      double ttlMs,
      double nodeTimeoutMs,
      double driftFactor,
      double driftAllowanceMs,
      int probesPerNode,
      Double restartQuarantineMs,
      Double quarantineWaitMs) {}

  /**
   * The whole report, as {@code --json} prints it.
   *
   * @param notAvailable the node fields that are null for at least one reachable node because its
   *     backend does not declare the capability they come from (status report, clock reads)
   * @param notAvailableReason what {@code notAvailable} means
   * @param backends every backend found (built in, or from {@code REDLOCK_CLASSPATH}) and the jar
   *     or folder it was loaded from
   * @param backendProblems providers that could not be loaded, and schemes claimed twice
   */
  record Report(
      Settings settings,
      List<NodeReport> nodes,
      String verdict,
      List<Verdict.Finding> findings,
      List<String> notAvailable,
      String notAvailableReason,
      List<Plugins.Backend> backends,
      List<String> backendProblems,
      List<String> misconfigured) {}

  /**
   * One node's results; durations in milliseconds, null where not measured or not reported.
   *
   * @param fencing whether the node keeps fencing counters (exec --fencing); null if not opened
   * @param reportsStatus whether the node declares status reports; null if not opened
   * @param serverVersion, uptimeSeconds, durable, incarnation, details from {@link
   *     LockNode#status()}; null where the node does not report a status or the report failed
   * @param quarantine where the node stands with respect to restart quarantine: one of n/a,
   *     not-needed, off, passed, active, status-unreadable, unsupported (see {@link
   *     io.redlock.NodeReport.Quarantine}); worked out by the doctor, which knows the settings
   * @param quarantineLeftMs for "active": how long until its votes count
   * @param readsClock whether the node declares reads of the store's clock ({@link
   *     LockNode#serverTime()}); null if not opened
   * @param clockOffsetMs the store's clock minus this machine's, in milliseconds (positive: the
   *     store is ahead), NTP-style from the read with the shortest round trip: the store's time
   *     minus the midpoint of the call on this machine's clock; null if the node does not read its
   *     clock or every read failed
   * @param clockOffsetUncertaintyMs half that read's round trip: the offset is right within this
   *     (plus the store clock's resolution)
   * @param clockError why reading the store's clock failed, if it did
   * @param clockNote why the offset is null, or that the store runs in this process and reads this
   *     machine's own clock (SQLite, in-process H2), so that its offset is ours by definition
   */
  record NodeReport(
      String node,
      String backend,
      boolean reachable,
      String error,
      Double openMs,
      Double firstCallMs,
      int roundTrips,
      Double rttMedianMs,
      Double rttWorstMs,
      Double ttlPrecisionMs,
      Boolean fencing,
      List<String> anomalies,
      Boolean reportsStatus,
      String serverVersion,
      String incarnation,
      Double uptimeSeconds,
      Boolean durable,
      Map<String, String> details,
      String statusError,
      String quarantine,
      Double quarantineLeftMs,
      Boolean readsClock,
      Double clockOffsetMs,
      Double clockOffsetUncertaintyMs,
      String clockError,
      String clockNote) {

    /**
     * The doctor's row for what the engine's probe found on one node.
     *
     * @param skip the round trips of the first round, left out of the RTT figures: they include
     *     connecting, which {@code firstCallMs} shows
     * @param quarantine where the node stands, as the doctor works it out from its settings
     */
    static NodeReport of(
        io.redlock.NodeReport r,
        String name,
        String backend,
        Double openMs,
        int skip,
        Restarts.QuarantineView quarantine) {
      String state = quarantine == null ? null : quarantine.state().label();
      Double left =
          quarantine == null || quarantine.left() == null
              ? null
              : Durations.millis(quarantine.left());
      if (!r.reachable()) {
        return unreachable(name, backend, openMs, CliWords.translate(r.error().orElse("?")), state);
      }
      Samples rtt = new Samples();
      r.roundTrips().stream()
          .skip(Math.min(skip, r.roundTrips().size() - 1))
          .forEach(d -> rtt.add(d.toNanos()));
      var caps = r.capabilities();
      var status = r.status().orElse(null);
      return new NodeReport(
          name,
          backend,
          true,
          r.error().map(CliWords::translate).orElse(null),
          openMs,
          Durations.millis(r.roundTrips().get(0)),
          rtt.size(),
          Durations.millis(rtt.median()),
          Durations.millis(rtt.max()),
          Durations.millis(caps.ttlPrecision()),
          caps.fencing(),
          r.anomalies(),
          caps.status(),
          r.version().orElse(null),
          status == null ? null : status.incarnation(),
          status == null ? null : status.uptime().toMillis() / 1000.0,
          status == null ? null : status.durable(),
          status == null ? null : status.details(),
          r.statusError().map(CliWords::translate).orElse(null),
          state,
          left,
          caps.clock(),
          r.clockOffset().map(Durations::millis).orElse(null),
          r.clockUncertainty().map(Durations::millis).orElse(null),
          r.clockError().map(CliWords::translate).orElse(null),
          r.clockNote().orElse(null));
    }

    /** A node that could not be opened, or did not answer its first call. */
    static NodeReport unreachable(
        String name, String backend, Double openMs, String why, String quarantine) {
      return new NodeReport(
          name,
          backend,
          false,
          why,
          openMs,
          null,
          0,
          null,
          null,
          null,
          null,
          List.of(),
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          quarantine,
          null,
          null,
          null,
          null,
          null,
          null);
    }

    /** True if the store runs in this process, on this machine's clock (SQLite, in-process H2). */
    boolean localClock() {
      return clockNote != null && clockNote.startsWith("this machine's own clock");
    }

    Duration worstRtt() {
      return rttWorstMs == null ? Duration.ZERO : Durations.ofMillis(rttWorstMs);
    }

    /** The node's own words on its durability, e.g. "not durable: synchronous=NORMAL". */
    String durability() {
      return details == null ? null : details.get("durability");
    }

    Duration clockOffset() {
      return Durations.ofMillis(clockOffsetMs);
    }

    Duration clockUncertainty() {
      return Durations.ofMillis(clockOffsetUncertaintyMs);
    }

    Duration uptime() {
      return uptimeSeconds == null ? null : Durations.ofMillis(uptimeSeconds * 1000);
    }
  }

  /** The fields some reachable node cannot report because it lacks the capability. */
  static List<String> notAvailable(List<NodeReport> reports) {
    List<String> out = new ArrayList<>();
    if (reports.stream().anyMatch(r -> Boolean.FALSE.equals(r.reportsStatus()))) {
      out.addAll(STATUS_FIELDS);
    }
    if (reports.stream().anyMatch(r -> Boolean.FALSE.equals(r.readsClock()))) {
      out.addAll(CLOCK_FIELDS);
    }
    return out;
  }

  static void printTable(
      PrintStream out,
      Report report,
      Duration ttl,
      Duration nodeTimeout,
      Duration drift,
      Restarts.Quarantine q) {
    Settings s = report.settings();
    out.printf(
        Locale.ROOT,
        "redlock doctor: %d node%s from %s, quorum %d%n",
        s.nodes(),
        s.nodes() == 1 ? "" : "s",
        s.nodesFrom(),
        s.quorum());
    out.printf(
        Locale.ROOT,
        "TTL %s, per-node timeout %s, drift allowance %s (factor %s), restart quarantine %s%n%n",
        Durations.format(ttl),
        Durations.format(nodeTimeout),
        Durations.format(drift),
        s.driftFactor(),
        q == null
            ? "off"
            : "for a maximum TTL of "
                + Durations.format(q.maxTtl())
                + " (a node that is not durable votes once up "
                + Durations.format(q.votesAfter())
                + ")");
    List<String[]> rows = new ArrayList<>();
    rows.add(
        new String[] {
          "NODE",
          "BACKEND",
          "REACHABLE",
          "OPEN",
          "FIRST CALL",
          "RTT MEDIAN",
          "RTT WORST",
          "TTL PRECISION",
          "FENCING"
        });
    for (NodeReport r : report.nodes()) {
      rows.add(
          new String[] {
            r.node(),
            r.backend() == null ? "-" : r.backend(),
            r.reachable()
                ? (r.error() == null ? "yes" : "errors")
                : report.misconfigured().contains(r.node()) ? "MISCONFIGURED" : "NO",
            ms(r.openMs()),
            ms(r.firstCallMs()),
            ms(r.rttMedianMs()),
            ms(r.rttWorstMs()),
            ms(r.ttlPrecisionMs()),
            r.fencing() == null ? "-" : r.fencing() ? "yes" : "no"
          });
    }
    printColumns(out, rows);
    out.printf(
        Locale.ROOT,
        "(RTT over %d round trips per node: %d probes of tryAcquire + extend + release on a fresh"
            + " key; FIRST CALL includes connecting)%n%n",
        3 * s.probesPerNode(),
        s.probesPerNode());
    List<String[]> status = new ArrayList<>();
    status.add(
        new String[] {
          "NODE",
          "VERSION",
          "UPTIME",
          "DURABLE",
          "RESTART QUARANTINE",
          "CLOCK OFFSET",
          "INCARNATION"
        });
    for (NodeReport r : report.nodes()) {
      status.add(
          new String[] {
            r.node(),
            na(r.serverVersion()),
            r.uptime() == null ? "n/a" : Durations.format(r.uptime()),
            r.durable() == null ? "n/a" : r.durable() ? "yes" : "NO",
            quarantineText(r),
            clockText(r),
            na(r.incarnation())
          });
    }
    printColumns(out, status);
    out.println(
        "(VERSION, UPTIME, DURABLE, INCARNATION: from the node's status report, n/a where the"
            + " backend reports none. CLOCK OFFSET: the store's clock minus this machine's,"
            + " + when the store is ahead, from the fastest of several reads, ± half its round"
            + " trip; n/a where the backend does not read the store's clock; \"this machine\""
            + " where the store runs in this process.)");
    // A missing table's DDL once, not once per node and again in the verdict.
    List<String> texts = new ArrayList<>();
    for (NodeReport r : report.nodes()) {
      texts.add(r.error() == null ? "" : r.error());
    }
    for (Verdict.Finding f : report.findings()) {
      texts.add(f.message());
    }
    texts = CliWords.blocksOnce(texts);
    List<String> errors = texts.subList(0, report.nodes().size());
    List<String> findingTexts = texts.subList(report.nodes().size(), texts.size());
    for (int i = 0; i < report.nodes().size(); i++) {
      NodeReport r = report.nodes().get(i);
      if (r.error() != null) {
        out.println("  " + r.node() + ": " + errors.get(i));
      }
      if (r.statusError() != null) {
        out.println("  " + r.node() + ": status report failed: " + r.statusError());
      }
      if (r.clockError() != null) {
        out.println("  " + r.node() + ": reading the store's clock failed: " + r.clockError());
      }
      for (String a : r.anomalies()) {
        out.println("  " + r.node() + ": ANOMALY: " + a);
      }
    }
    out.println();
    out.println("Backends (" + Plugins.ENV + " adds more):");
    for (Plugins.Backend b : report.backends()) {
      out.println("  " + String.join(", ", b.schemes()) + ": loaded from " + b.loadedFrom());
    }
    for (String problem : report.backendProblems()) {
      out.println("  PROBLEM: " + problem);
    }
    out.println();
    out.println("Verdict: " + report.verdict());
    for (int i = 0; i < report.findings().size(); i++) {
      Verdict.Finding f = report.findings().get(i);
      out.printf(
          Locale.ROOT,
          "  %-4s  %s%n",
          f.level().name().toLowerCase(Locale.ROOT),
          findingTexts.get(i));
    }
  }

  /** E.g. "+30.02 s ±212 µs", "-1.5 ms ±40 µs", "+12 µs ±30 µs (this machine)", "n/a". */
  static String clockText(NodeReport r) {
    Duration offset = r.clockOffset();
    if (offset == null) {
      return r.clockError() != null ? "failed" : "n/a";
    }
    String text =
        (offset.isNegative() ? "-" : "+")
            + Durations.format(offset.abs())
            + " ±"
            + Durations.format(r.clockUncertainty() == null ? Duration.ZERO : r.clockUncertainty());
    return r.localClock() ? text + " (this machine)" : text;
  }

  private static String na(String value) {
    return value == null || value.isBlank() ? "n/a" : value;
  }

  private static String quarantineText(NodeReport r) {
    String state = r.quarantine() == null ? "n/a" : r.quarantine();
    return switch (state) {
      case "not-needed" -> "not needed (durable)";
      case "off" -> "OFF (not durable)";
      case "passed" -> "passed (votes)";
      case "active" ->
          "ACTIVE: votes in " + Durations.format(Durations.ofMillis(r.quarantineLeftMs()));
      case "status-unreadable" -> "status unreadable: does not vote";
      case "unsupported" -> "UNSUPPORTED (no status)";
      default -> state;
    };
  }

  private static String ms(Double millis) {
    return millis == null ? "-" : Durations.format(Durations.ofMillis(millis));
  }

  static void printColumns(PrintStream out, List<String[]> rows) {
    int cols = rows.get(0).length;
    int[] width = new int[cols];
    for (String[] row : rows) {
      for (int i = 0; i < cols; i++) {
        width[i] = Math.max(width[i], row[i].length());
      }
    }
    for (String[] row : rows) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < cols; i++) {
        line.append(row[i]);
        if (i < cols - 1) {
          line.append(" ".repeat(width[i] - row[i].length() + 2));
        }
      }
      out.println(line.toString().stripTrailing());
    }
  }
}
