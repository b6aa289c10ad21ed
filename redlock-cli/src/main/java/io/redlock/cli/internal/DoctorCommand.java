package io.redlock.cli.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.redlock.Lease;
import io.redlock.NodeFailure;
import io.redlock.NodesMisconfiguredException;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import io.redlock.RedlockSettings;
import io.redlock.cli.internal.DoctorReport.NodeReport;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodes;
import io.redlock.spi.NodeUri;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
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

  @Override
  public Integer call() throws Exception {
    if (probes < 1 || probes > 1000) {
      throw new CliException(ExitCodes.USAGE, "--probes must be between 1 and 1000, got " + probes);
    }
    Durations.requirePositive("--ttl", ttl);
    Durations.requirePositive("--probe-timeout", probeTimeout);
    Durations.requirePositive("--budget", budget);
    Restarts.check(quarantine, ttl);
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
    List<Probed> probed = probeAll(backends, uris, settings);
    EngineVerdict verdict = awaitEngineVerdict(engineVerdict, budgetEnds);
    List<NodeReport> reports = new ArrayList<>();
    List<NodeReport> facts = new ArrayList<>();
    for (Probed p : probed) {
      NodeReport r = p.row(null);
      reports.add(p.row(Restarts.quarantine(r, q)));
      facts.add(r);
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
    DoctorReport.Settings s =
        new DoctorReport.Settings(
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
    DoctorReport.Report report =
        new DoctorReport.Report(
            s,
            reports,
            level.name(),
            findings,
            DoctorReport.notAvailable(reports),
            "fields that are null for at least one reachable node because its backend does not"
                + " declare what they come from: "
                + String.join(", ", DoctorReport.STATUS_FIELDS)
                + " need capabilities().status(), "
                + String.join(", ", DoctorReport.CLOCK_FIELDS)
                + " need capabilities().clock()",
            Plugins.describe(backends),
            backends.problems(),
            List.copyOf(verdict.misconfigured()));
    if (json) {
      ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
      out.println(mapper.writeValueAsString(report));
    } else {
      DoctorReport.printTable(out, report, ttl, nodeTimeout, drift, q);
    }
    out.flush();
    return exitCode(findings);
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
      redlock.probe(
          NodeOptions.WARM_UP_TIMEOUT); // as exec warms up: a cold first call is no verdict
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
                  "%s (no retry fixes this; exec --no-strict outvotes %s, but the quorum tolerates"
                          .formatted(
                              String.join("; ", CliWords.blocksOnce(causes)),
                              outvoted.size() == 1 ? "it" : "them")
                      + (outvoted.size() == 1
                          ? " one failure less until it is fixed)"
                          : " %d failures less until they are fixed)".formatted(outvoted.size())))),
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
   * One node as the doctor found it: the engine's probe report, or why there is none (it could not
   * be opened in time).
   */
  private record Probed(
      String name, String backend, Double openMs, io.redlock.NodeReport report, String why) {
    NodeReport row(Restarts.QuarantineView quarantine) {
      return report == null
          ? NodeReport.unreachable(
              name, backend, openMs, why, quarantine == null ? null : quarantine.state().label())
          : NodeReport.of(report, name, backend, openMs, 3, quarantine);
    }
  }

  /**
   * Opens every node on its own, all at once (a node that cannot be opened is reported with why),
   * then probes those that opened with the engine's probe ({@link Redlock#probe}): a first round
   * whose first call includes connecting, then --probes rounds, all within --budget, each call
   * within --probe-timeout. The nodes are closed in the background afterwards.
   */
  private List<Probed> probeAll(LockNodes backends, List<NodeUri> uris, RedlockSettings settings) {
    long deadline = System.nanoTime() + budget.toNanos();
    ExecutorService pool =
        Executors.newFixedThreadPool(
            Math.max(1, Math.min(uris.size(), 32)), daemon("redlock-doctor-open"));
    List<Future<LockNode>> opening = new ArrayList<>();
    double[] openMs = new double[uris.size()];
    for (int i = 0; i < uris.size(); i++) {
      int at = i;
      opening.add(
          pool.submit(
              () -> {
                long t0 = System.nanoTime();
                LockNode node = backends.open(uris.get(at));
                openMs[at] = Durations.millis(System.nanoTime() - t0);
                return node;
              }));
    }
    pool.shutdown();
    String[] why = new String[uris.size()];
    List<LockNode> opened = new ArrayList<>();
    List<Integer> openedAt = new ArrayList<>();
    for (int i = 0; i < uris.size(); i++) {
      try {
        opened.add(
            opening.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
        openedAt.add(i);
      } catch (TimeoutException e) {
        opening.get(i).cancel(true);
        why[i] =
            "no answer within doctor's budget of "
                + Durations.human(budget)
                + " (--budget); the node hangs or is very slow";
      } catch (ExecutionException e) {
        why[i] = "could not open: " + CliWords.nodeMessage(uris.get(i).redacted(), e.getCause());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new CliException(ExitCodes.INTERNAL, "interrupted while probing the nodes", e);
      }
    }
    List<io.redlock.NodeReport> reports = List.of();
    Redlock redlock = null;
    if (!opened.isEmpty()) {
      try {
        redlock =
            Redlock.builder()
                .settings(settings)
                .strictNodes(false)
                .allowSharedServers()
                .nodes(opened)
                .build();
        long left = Math.max(1, deadline - System.nanoTime());
        long calls = 3L * (probes + 1) + 1 + Math.min(probes + 1, 20);
        reports =
            redlock.probe(
                probes + 1, Duration.ofNanos(Math.min(left, probeTimeout.toNanos() * calls)));
      } catch (RuntimeException e) {
        for (int i : openedAt) {
          why[i] = CliWords.nodeMessage(uris.get(i).redacted(), e);
        }
        LockNodes.closeQuietly(opened, e);
      }
    }
    List<Probed> out = new ArrayList<>();
    for (int i = 0; i < uris.size(); i++) {
      int k = openedAt.indexOf(i);
      out.add(
          new Probed(
              uris.get(i).redacted(),
              k < 0 ? null : opened.get(k).getClass().getSimpleName(),
              k < 0 ? null : openMs[i],
              k < 0 || reports.isEmpty() ? null : reports.get(k),
              why[i]));
    }
    if (redlock != null) {
      Thread closer = new Thread(redlock::close, "redlock-doctor-close");
      closer.setDaemon(true);
      closer.start();
      try {
        closer.join(300);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return out;
  }
}
