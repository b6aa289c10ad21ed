package io.redlock.cli.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.redlock.Lease;
import io.redlock.NodeFailure;
import io.redlock.NodesMisconfiguredException;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import io.redlock.RedlockSettings;
import io.redlock.cli.internal.NodeProbe.NodeReport;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodes;
import io.redlock.spi.NodeUri;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code redlock doctor}: probes every node on its own (reachability, round-trip latency) and
 * judges the Redlock timing assumptions for the configured TTL and per-node timeout.
 */
@Command(
    name = "doctor",
    sortOptions = false,
    usageHelpAutoWidth = true,
    mixinStandardHelpOptions = true,
    description = {
      "Checks every node: reachable or not, round-trip latency (median and worst over a few probes"
          + " of tryAcquire + extend + release on a fresh key), TTL precision, fencing counters;"
          + " then judges the Redlock timing assumptions for the TTL and per-node timeout.",
      "Version, incarnation (an identity that changes when the store restarts), uptime and"
          + " durability come from nodes that report their status; the others show n/a. A node"
          + " that is not durable forgets its locks when it restarts: the verdict says so, and"
          + " with --quarantine it shows which nodes restart quarantine would keep from voting,"
          + " and for how long.",
      "Clock offset: the store's clock minus this machine's (positive: the store is ahead),"
          + " NTP-style from the fastest of several reads, give or take half its round trip;"
          + " n/a for nodes whose backend does not read the store's clock. Redlock needs only"
          + " clock rates to agree, but an offset above 1 s means the store's clock is not"
          + " synchronised with this machine's, and the verdict warns.",
      "Lists every backend with the jar or folder it was loaded from (third-party ones come"
          + " from REDLOCK_CLASSPATH).",
      "Nodes that report the same incarnation are one server listed twice (127.0.0.1 and"
          + " localhost, or /0 and /1 on one Redis): the verdict fails, as exec refuses them,"
          + " since their votes fail together.",
      "Nodes that fail in a way no retry fixes (a wrong password, a missing table, an unknown"
          + " host, a refused TLS handshake) fail the verdict as they fail exec, in exec's words:"
          + " doctor asks the engine, built with the same settings, for one attempt on a fresh"
          + " key. With --no-strict they are a warning, as exec --no-strict outvotes them.",
      "Nodes are probed in parallel, and doctor answers within --budget (6s by default) however"
          + " many nodes are down.",
      "Exits with 0 if the verdict is OK or WARN, 69 if fewer than a quorum of nodes are"
          + " reachable (or, with --quarantine, may vote), 78 if nodes are misconfigured (as"
          + " above: exec exits with 78 on them too) or the timing does not fit, 64 if"
          + " --quarantine is given and a node cannot report its status."
    })
final class DoctorCommand implements Callable<Integer> {
  @Option(
      names = "--ttl",
      defaultValue = "30s",
      converter = Durations.class,
      paramLabel = "DURATION",
      description = "The lock TTL to judge the timing for. Default: ${DEFAULT-VALUE}.")
  Duration ttl;

  @Option(
      names = "--probes",
      defaultValue = "5",
      paramLabel = "N",
      description = "Probes per node, each 3 round trips. Default: ${DEFAULT-VALUE}.")
  int probes;

  @Option(
      names = "--probe-timeout",
      defaultValue = "3s",
      converter = Durations.class,
      paramLabel = "DURATION",
      description = "How long to wait for one probe call. Default: ${DEFAULT-VALUE}.")
  Duration probeTimeout;

  @Option(
      names = "--budget",
      defaultValue = "6s",
      converter = Durations.class,
      paramLabel = "DURATION",
      description =
          "The time doctor gives all the nodes together: they are probed at once, and a node"
              + " still not done after this is reported as such, so that doctor answers within"
              + " it however many nodes are down. Default: ${DEFAULT-VALUE}.")
  Duration budget;

  @Option(
      names = "--quarantine",
      converter = Durations.class,
      paramLabel = "MAXTTL",
      description =
          "Judge as exec --quarantine MAXTTL would run: a node that is not durable votes only once"
              + " it has been up for MAXTTL plus the drift allowance. Default: off.")
  Duration quarantine;

  @Option(
      names = "--strict",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description =
          "Judge as exec --strict (the default) would run: a node that fails in a way no retry"
              + " fixes (a wrong password, a missing table, an unknown host, a refused TLS"
              + " handshake) is a failure, exit 78, even if the other nodes make a majority. With"
              + " --no-strict it is a warning: such a node is outvoted.")
  boolean strict;

  @Option(names = "--json", description = "Print JSON instead of a table.")
  boolean json;

  @Mixin NodeOptions nodeOptions;

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

  @Override
  public Integer call() throws Exception {
    if (probes < 1 || probes > 1000) {
      throw new CliException(ExitCodes.USAGE, "--probes must be between 1 and 1000, got " + probes);
    }
    ExecCommand.requirePositive("--ttl", ttl);
    ExecCommand.requirePositive("--probe-timeout", probeTimeout);
    ExecCommand.requirePositive("--budget", budget);
    ExecCommand.checkQuarantine(quarantine, ttl);
    PrintStream out = System.out;
    nodeOptions.quietEngineLog(); // the findings say it, in the tool's words
    NodeOptions.Selection selection = nodeOptions.selectHere(System.getenv(), System.err);
    LockNodes backends = LockNodes.discover();
    List<NodeUri> uris;
    try {
      uris = LockNodes.parseAll(selection.uris());
      for (NodeUri uri : uris) {
        backends.providerFor(uri);
      }
    } catch (IllegalArgumentException | RedlockException e) {
      throw new CliException(ExitCodes.USAGE, NodeOptions.withSource(e.getMessage(), selection), e);
    }
    RedlockSettings settings = settings(selection);
    Duration nodeTimeout = settings.nodeTimeoutFor(ttl);
    Duration drift = settings.driftFor(ttl);
    Restarts.Quarantine q =
        quarantine == null
            ? null
            : new Restarts.Quarantine(quarantine, quarantine.plus(settings.driftFor(quarantine)));

    // What exec would say about these nodes, found by the engine while the probes run.
    ExecutorService engine = Executors.newSingleThreadExecutor(daemon("redlock-doctor-engine"));
    long budgetEnds = System.nanoTime() + budget.toNanos();
    Future<EngineVerdict> engineVerdict =
        engine.submit(() -> engineVerdict(backends, selection, uris, settings));
    engine.shutdown();
    List<NodeReport> probed = probeAll(backends, uris);
    EngineVerdict verdict = awaitEngineVerdict(engineVerdict, budgetEnds);
    List<NodeReport> reports = new ArrayList<>();
    List<Verdict.NodeFacts> facts = new ArrayList<>();
    for (NodeReport r : probed) {
      Verdict.NodeFacts f =
          new Verdict.NodeFacts(
              r.node(),
              r.reachable(),
              r.rttWorstMs() == null
                  ? Duration.ZERO
                  : Duration.ofNanos((long) (r.rttWorstMs() * 1e6)),
              r.durable(),
              r.uptime(),
              r.reportsStatus(),
              r.fencing(),
              r.details() == null ? null : r.details().get("durability"));
      f = f.withClock(r.readsClock(), r.clockOffset(), r.clockUncertainty(), localClock(r));
      Restarts.QuarantineView view = Restarts.quarantine(f, q);
      reports.add(
          r.withQuarantine(
              view.state().json, view.left() == null ? null : Durations.millis(view.left())));
      facts.add(f);
    }
    List<Verdict.Finding> findings = new ArrayList<>();
    if (verdict.finding() != null) {
      findings.add(verdict.finding());
    }
    findings.addAll(
        Verdict.judge(
            facts, ttl, nodeTimeout, drift, selection.zeroSetup(), q, verdict.misconfigured()));
    Map<String, String> incarnations = new LinkedHashMap<>();
    for (NodeReport r : reports) {
      if (r.reachable() && r.incarnation() != null && !r.incarnation().isBlank()) {
        incarnations.put(r.node(), r.incarnation());
      }
    }
    Verdict.sameServer(incarnations).ifPresent(findings::add);
    Verdict.Level level = Verdict.overall(findings);
    int n = uris.size();
    Settings s =
        new Settings(
            selection.source(),
            selection.zeroSetup(),
            n,
            n / 2 + 1,
            Durations.millis(ttl),
            Durations.millis(nodeTimeout),
            settings.driftFactor(),
            Durations.millis(drift),
            probes,
            q == null ? null : Durations.millis(q.maxTtl()),
            q == null ? null : Durations.millis(q.votesAfter()));
    Report report =
        new Report(
            s,
            reports,
            level.name(),
            findings,
            notAvailable(reports),
            "fields that are null for at least one reachable node because its backend does not"
                + " declare what they come from: "
                + String.join(", ", STATUS_FIELDS)
                + " need capabilities().status(), "
                + String.join(", ", CLOCK_FIELDS)
                + " need capabilities().clock()",
            Plugins.describe(backends),
            backends.problems(),
            List.copyOf(verdict.misconfigured()));
    if (json) {
      ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
      out.println(mapper.writeValueAsString(report));
    } else {
      printTable(out, report, ttl, nodeTimeout, drift, q);
    }
    out.flush();
    return exitCode(findings);
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

  /** True if the node's store runs in this process, on this machine's clock. */
  private static boolean localClock(NodeReport r) {
    return NodeProbe.localClock(r.node()) != null;
  }

  /** 69 for too few reachable (or voting) nodes, 64 for --quarantine on unfit nodes, else 78. */
  static int exitCode(List<Verdict.Finding> findings) {
    int code = ExitCodes.OK;
    int best = Integer.MAX_VALUE;
    for (Verdict.Finding f : findings) {
      if (f.level() != Verdict.Level.FAIL) {
        continue;
      }
      int c =
          switch (f.topic()) {
            case MISCONFIGURED -> ExitCodes.CONFIG;
            case REACHABILITY, QUARANTINE -> ExitCodes.UNREACHABLE;
            case QUARANTINE_SUPPORT -> ExitCodes.USAGE;
            default -> ExitCodes.CONFIG;
          };
      // Precedence: misconfigured nodes (exec stops at once on them, whatever else is wrong),
      // then nothing reachable, then a usage problem, then timing.
      int r = f.topic() == Verdict.Topic.MISCONFIGURED ? -1 : rank(c);
      if (code == ExitCodes.OK || r < best) {
        code = c;
        best = r;
      }
    }
    return code;
  }

  private static int rank(int code) {
    return switch (code) {
      case ExitCodes.UNREACHABLE -> 0;
      case ExitCodes.USAGE -> 1;
      default -> 2;
    };
  }

  /**
   * What the engine says of the nodes, as exec would hear it.
   *
   * @param finding a failure (strict) or warning (--no-strict) naming the nodes that fail in a way
   *     no retry fixes, in exec's words; null when there are none, or the check did not end in time
   * @param misconfigured those nodes, by the doctor's names for them
   */
  record EngineVerdict(Verdict.Finding finding, Set<String> misconfigured) {
    static final EngineVerdict NONE = new EngineVerdict(null, Set.of());
  }

  /**
   * Builds a Redlock over the same nodes with the same settings as exec (strict or not), warmed up
   * as exec warms it up, and tries a fresh key once: the engine, not a second classifier, tells
   * which nodes are misconfigured (a wrong password, a missing table, an unknown host, a refused
   * TLS handshake), in the words exec prints. One server listed twice is left to the doctor's own
   * finding, which names the nodes by the incarnation they report.
   */
  private EngineVerdict engineVerdict(
      LockNodes backends,
      NodeOptions.Selection selection,
      List<NodeUri> uris,
      RedlockSettings settings) {
    List<LockNode> nodes;
    try {
      nodes = backends.openAll(selection.uris());
    } catch (RuntimeException e) {
      return EngineVerdict.NONE; // the probes report the node that cannot be opened
    }
    Map<String, String> doctorName = new LinkedHashMap<>();
    for (int i = 0; i < nodes.size(); i++) {
      doctorName.put(NodeUri.redact(nodes.get(i).name()), uris.get(i).redacted());
    }
    String key = "redlock-doctor:" + java.util.UUID.randomUUID();
    NodeOptions.warmUp(nodes, NodeOptions.WARM_UP_TIMEOUT);
    Redlock redlock;
    try {
      redlock =
          Redlock.builder()
              .settings(settings.withRetry(1, settings.retryDelayMin(), settings.retryDelayMax()))
              .strictNodes(strict)
              .allowSharedServers()
              .nodes(nodes)
              .build();
    } catch (NodesMisconfiguredException m) {
      LockNodes.closeQuietly(nodes, m);
      return misconfigured(m, key, doctorName);
    } catch (RuntimeException e) {
      LockNodes.closeQuietly(nodes, e);
      return EngineVerdict.NONE;
    }
    try (redlock) {
      Optional<Lease> lease = redlock.tryAcquire(key, ttl);
      if (lease.isEmpty()) {
        return EngineVerdict.NONE;
      }
      List<NodeFailure> outvoted =
          lease.get().failedNodes().stream().filter(f -> !f.isTransient()).toList();
      lease.get().release();
      if (outvoted.isEmpty()) {
        return EngineVerdict.NONE;
      }
      // --no-strict: exec runs, with one warning line per node
      List<String> causes = new ArrayList<>();
      for (NodeFailure f : outvoted) {
        causes.add(f.toString());
      }
      return new EngineVerdict(
          new Verdict.Finding(
              Verdict.Level.WARN,
              Verdict.Topic.MISCONFIGURED,
              CliWords.tell(
                  String.join("; ", CliWords.blocksOnce(causes))
                      + " (no retry fixes this; exec --no-strict outvotes "
                      + (outvoted.size() == 1 ? "it" : "them")
                      + ", but the quorum tolerates "
                      + (outvoted.size() == 1 ? "one failure" : outvoted.size() + " failures")
                      + " less until "
                      + (outvoted.size() == 1 ? "it is" : "they are")
                      + " fixed)")),
          names(outvoted, doctorName));
    } catch (NodesMisconfiguredException m) {
      return misconfigured(m, key, doctorName);
    } catch (RuntimeException e) {
      return EngineVerdict.NONE; // not a misconfiguration: the probes say what it is
    }
  }

  /** Exec's words for nodes that fail in a way no retry fixes (exit 78). */
  private static EngineVerdict misconfigured(
      NodesMisconfiguredException m, String key, Map<String, String> doctorName) {
    String message = RedlockCommand.misconfigured(m).replace("cannot lock '" + key + "': ", "");
    return new EngineVerdict(
        new Verdict.Finding(
            Verdict.Level.FAIL,
            Verdict.Topic.MISCONFIGURED,
            CliWords.tell(message.replace(System.lineSeparator() + "redlock:   ", "; "))
                + " (exec exits with 78 on these nodes)"),
        names(m.failures(), doctorName));
  }

  private static Set<String> names(List<NodeFailure> failures, Map<String, String> doctorName) {
    Set<String> out = new java.util.LinkedHashSet<>();
    for (NodeFailure f : failures) {
      out.add(doctorName.getOrDefault(f.node(), f.node()));
    }
    return out;
  }

  /**
   * The engine's verdict, waited for until --budget ends (as the probes are), and at least a moment
   * after them: its build waits at most a second for statuses, and its one attempt at most a node
   * timeout. Without an answer by then, the probes' findings stand alone.
   */
  private static EngineVerdict awaitEngineVerdict(Future<EngineVerdict> verdict, long budgetEnds) {
    long wait = Math.max(budgetEnds - System.nanoTime(), 200_000_000L);
    try {
      return verdict.get(wait, TimeUnit.NANOSECONDS);
    } catch (TimeoutException | ExecutionException e) {
      verdict.cancel(true);
      return EngineVerdict.NONE;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CliException(ExitCodes.INTERNAL, "interrupted while probing the nodes", e);
    }
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  private RedlockSettings settings(NodeOptions.Selection selection) {
    RedlockSettings settings = RedlockSettings.defaults();
    try {
      Duration timeout =
          nodeOptions.nodeTimeout != null ? nodeOptions.nodeTimeout : selection.nodeTimeout();
      if (timeout != null) {
        settings = settings.withNodeTimeout(timeout);
      }
      Double drift =
          nodeOptions.driftFactor != null ? nodeOptions.driftFactor : selection.driftFactor();
      if (drift != null) {
        settings = settings.withDriftFactor(drift);
      }
    } catch (IllegalArgumentException e) {
      throw new CliException(ExitCodes.USAGE, e.getMessage(), e);
    }
    return settings;
  }

  /**
   * Probes every node at once, each on a thread of its own, and waits for them within {@link
   * #budget}: a node that is down costs one probe timeout, not one per node. A node still being
   * probed when the budget runs out is reported as not answering within it. The nodes are closed in
   * the background afterwards, for as long as the process lives.
   */
  private List<NodeReport> probeAll(LockNodes backends, List<NodeUri> uris) {
    long deadline = System.nanoTime() + budget.toNanos();
    List<LockNode> opened = java.util.Collections.synchronizedList(new ArrayList<>());
    ExecutorService pool =
        Executors.newFixedThreadPool(
            Math.max(1, Math.min(uris.size(), 32)), daemon("redlock-doctor-probe"));
    List<Future<NodeReport>> futures = new ArrayList<>();
    for (NodeUri uri : uris) {
      futures.add(pool.submit(() -> probe(backends, uri, deadline, opened)));
    }
    List<NodeReport> reports = new ArrayList<>();
    for (int i = 0; i < uris.size(); i++) {
      try {
        // A little past the deadline: a probe that respects it has finished by then.
        long wait = Math.max(0, deadline - System.nanoTime()) + 200_000_000L;
        reports.add(futures.get(i).get(wait, TimeUnit.NANOSECONDS));
      } catch (TimeoutException e) {
        futures.get(i).cancel(true);
        reports.add(
            NodeReport.unreachable(
                uris.get(i).redacted(),
                null,
                null,
                "no answer within doctor's budget of "
                    + Durations.human(budget)
                    + " (--budget); the node hangs or is very slow"));
      } catch (ExecutionException e) {
        Throwable cause = e.getCause() == null ? e : e.getCause();
        reports.add(
            NodeReport.unreachable(
                uris.get(i).redacted(), null, null, NodeUri.redact(String.valueOf(cause))));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new CliException(ExitCodes.INTERNAL, "interrupted while probing the nodes", e);
      }
    }
    pool.shutdownNow();
    List<LockNode> toClose;
    synchronized (opened) {
      toClose = new ArrayList<>(opened);
    }
    Thread closer =
        new Thread(
            () -> toClose.parallelStream().forEach(n -> LockNodes.closeQuietly(List.of(n), null)),
            "redlock-doctor-close");
    closer.setDaemon(true);
    closer.start();
    try {
      closer.join(300);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return reports;
  }

  /** Opens one node on its own and probes it; a node that cannot be opened is unreachable. */
  private NodeReport probe(LockNodes backends, NodeUri uri, long deadline, List<LockNode> opened) {
    String name = uri.redacted();
    long t0 = System.nanoTime();
    LockNode node;
    try {
      node = backends.open(uri);
    } catch (RuntimeException e) {
      return NodeReport.unreachable(
          name, null, null, "could not open: " + NodeProbe.message(name, null, e));
    }
    opened.add(node);
    double openMs = Durations.millis(System.nanoTime() - t0);
    return NodeProbe.probe(name, node, openMs, ttl, probes, probeTimeout, deadline);
  }

  private void printTable(
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
        3 * probes,
        probes);
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
    return localClock(r) ? text + " (this machine)" : text;
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
          "ACTIVE: votes in "
              + Durations.format(Duration.ofNanos((long) (r.quarantineLeftMs() * 1e6)));
      case "status-unreadable" -> "status unreadable: does not vote";
      case "unsupported" -> "UNSUPPORTED (no status)";
      default -> state;
    };
  }

  private static String ms(Double millis) {
    if (millis == null) {
      return "-";
    }
    return Durations.format(Duration.ofNanos((long) (millis * 1e6)));
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
