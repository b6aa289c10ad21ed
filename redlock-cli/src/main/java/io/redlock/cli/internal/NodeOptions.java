package io.redlock.cli.internal;

import io.redlock.ConfiguredNodes;
import io.redlock.NodeReport;
import io.redlock.NodesMisconfiguredException;
import io.redlock.Redlock;
import io.redlock.RedlockBuilder;
import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodes;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeUri;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;
import picocli.CommandLine.Option;

/**
 * The options every subcommand shares: which nodes, and the timing settings of the quorum. Nodes
 * come from, first found wins: {@code --nodes}, {@code --config FILE}, the environment ({@code
 * REDLOCK_NODES}, {@code REDLOCK_CONFIG}), else the zero-setup quorum of three SQLite files.
 */
final class NodeOptions {
  /** Keys a {@code --config} file may hold. */
  static final Set<String> CONFIG_KEYS = Set.of("nodes", "node-timeout", "drift-factor");

  /**
   * The longest the warm-up round trip may take before the first lock attempt: enough for a cold
   * connection (TLS, authentication), not for a node that is down, whose backend may keep trying to
   * connect for seconds; the first attempt goes ahead without it.
   */
  static final Duration WARM_UP_TIMEOUT = Duration.ofSeconds(1);

  /** The warm-up's budget when the caller does not wait for the lock (--no-wait). */
  static final Duration WARM_UP_MIN = Duration.ofMillis(500);

  /** How many SQLite files make the zero-setup quorum. */
  static final int ZERO_SETUP_NODES = 3;

  /** The file beside the zero-setup SQLite files that says the note about them was printed. */
  static final String ZERO_SETUP_MARKER = "README";

  @Option(
      names = "--nodes",
      paramLabel = "URIS",
      description = {
        "Node URIs separated by commas or spaces, any mix of backends, e.g."
            + " redis://a:6379,redis://b:6379,jdbc:postgresql://c/locks. Repeatable.",
        "Default: $REDLOCK_NODES, else the zero-setup quorum of 3 SQLite files in"
            + " $XDG_DATA_HOME/redlock (~/.local/share/redlock)."
      })
  List<String> nodes;

  @Option(
      names = "--config",
      paramLabel = "FILE",
      description =
          "Properties file with nodes=URIS (and optionally node-timeout=, drift-factor=)."
              + " Default: $REDLOCK_CONFIG.")
  Path config;

  @Option(
      names = "--node-timeout",
      paramLabel = "DURATION",
      converter = Durations.class,
      description =
          "How long one node may take to answer one call. Default: TTL/50 within [20ms, 1s].")
  Duration nodeTimeout;

  @Option(
      names = "--drift-factor",
      paramLabel = "FRACTION",
      description = "Share of the TTL allowed for clock drift. Default: 0.01.")
  Double driftFactor;

  @Option(
      names = {"-v", "--verbose"},
      description =
          "Say more on stderr, including the libraries' debug logs (also accepted before the"
              + " subcommand: redlock -v exec ...).")
  void verbose(boolean on) {
    this.verbose = on;
    if (on) {
      verboseLogs();
    }
  }

  boolean verbose;

  /** Where {@link #select} tells people things. */
  private PrintStream err = System.err;

  /** Where notes said once are remembered: the data directory of the zero-setup files. */
  private Path notesDir;

  /** The nodes of the Redlock {@link #build} made last (it owns and closes them). */
  List<LockNode> opened = List.of();

  /** Whether -v was given, before or after the subcommand. */
  boolean verbose() {
    return verbose;
  }

  /** Takes the options given before the subcommand, where this did not set them. */
  void inherit(NodeOptions before) {
    nodes = nodes != null ? nodes : before.nodes;
    config = config != null ? config : before.config;
    nodeTimeout = nodeTimeout != null ? nodeTimeout : before.nodeTimeout;
    driftFactor = driftFactor != null ? driftFactor : before.driftFactor;
    verbose |= before.verbose;
  }

  boolean anyNodeOption() {
    return nodes != null || config != null || nodeTimeout != null || driftFactor != null;
  }

  /**
   * Leaves the telling of a lost lease to the tool (its own message says more), unless -v: the
   * engine's lease logger only speaks up for errors. Call before the first lease is made.
   */
  void quietLeaseLog() {
    if (!verbose()) {
      System.setProperty(
          "org.slf4j.simpleLogger.log.io.redlock.engine.internal.QuorumLease", "error");
    }
  }

  /**
   * Turns on Redlock's own debug logs, and the third-party libraries' (Netty, Vert.x, the drivers,
   * pools) at INFO: their DEBUG lines are about their own start-up, not about the nodes. Read by
   * slf4j-simple when each logger is made.
   */
  static void verboseLogs() {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "info");
    System.setProperty("org.slf4j.simpleLogger.log.io.redlock", "debug");
  }

  /**
   * Leaves to the tool what the engine would log at WARN on every run: a misconfigured node (the
   * tool names each one itself, once, with exit 78 or a warning line) and nodes that are not
   * durable (the tool says that once, see {@link #noteNotDurable}). With -v the engine says it too.
   * Call before the first Redlock is built.
   */
  void quietEngineLog() {
    if (!verbose()) {
      System.setProperty(
          "org.slf4j.simpleLogger.log.io.redlock.engine.internal.BuildChecks", "error");
      System.setProperty(
          "org.slf4j.simpleLogger.log.io.redlock.engine.internal.NodeStates", "error");
    }
  }

  /**
   * The nodes to use and where they came from.
   *
   * @param uris the URIs, {@code ${VAR}} references expanded (may hold passwords: never print them
   *     raw)
   * @param source where they were configured, for messages
   * @param zeroSetup true for the embedded SQLite default
   * @param nodeTimeout from a config file, if it set one
   * @param driftFactor from a config file, if it set one
   * @param credentialVariables environment variables that hold node credentials: those referenced
   *     as {@code ${VAR}} where a password goes, and {@code REDLOCK_NODES} when it holds a password
   *     itself; exec removes them from the command's environment
   */
  record Selection(
      List<String> uris,
      String source,
      boolean zeroSetup,
      Duration nodeTimeout,
      Double driftFactor,
      Set<String> credentialVariables) {
    Selection(
        List<String> uris,
        String source,
        boolean zeroSetup,
        Duration nodeTimeout,
        Double driftFactor) {
      this(uris, source, zeroSetup, nodeTimeout, driftFactor, Set.of());
    }
  }

  /**
   * The nodes a command uses: inside {@code redlock exec} without node options of its own, the
   * parent exec's (credentials included, never through the environment); else {@link #select}.
   */
  Selection selectHere(Map<String, String> env, PrintStream err) {
    return ParentExec.nodes(this, env).orElseGet(() -> select(env, err));
  }

  /**
   * Resolves the nodes; with none configured, prepares the zero-setup quorum and, the first time,
   * says so on {@code err}. {@code ${VAR}} references in the URIs are expanded from {@code env}.
   */
  Selection select(Map<String, String> env, PrintStream err) {
    this.err = err;
    this.notesDir = dataDir(env);
    Selection raw = selectRaw(env, err);
    if (raw.zeroSetup()) {
      return raw;
    }
    Set<String> credentials = new TreeSet<>();
    for (String template : raw.uris()) {
      NodeSources.checkPorts(template, raw);
      String redactedTemplate = NodeUri.redact(template);
      for (String name : ConfiguredNodes.variables(template)) {
        if (!redactedTemplate.contains("${" + name + "}")) {
          credentials.add(name); // where a password goes: redaction hid the reference
        }
      }
    }
    List<String> expanded;
    try {
      expanded = new ConfiguredNodes(raw.uris(), raw.source()).expand(env).uris();
    } catch (RedlockNonTransientException e) {
      throw new CliException(ExitCodes.USAGE, e.getMessage());
    }
    String fromEnv = env.get(ConfiguredNodes.NODES_ENV);
    if (fromEnv != null && NodeSources.holdsPassword(fromEnv)) {
      credentials.add(ConfiguredNodes.NODES_ENV);
    }
    return new Selection(
        List.copyOf(expanded),
        raw.source(),
        false,
        raw.nodeTimeout(),
        raw.driftFactor(),
        Set.copyOf(credentials));
  }

  private Selection selectRaw(Map<String, String> env, PrintStream err) {
    if (nodes != null && !nodes.isEmpty()) {
      List<String> uris = new ArrayList<>();
      for (String list : nodes) {
        uris.addAll(ConfiguredNodes.split(list));
      }
      if (uris.isEmpty()) {
        throw new CliException(ExitCodes.USAGE, "--nodes was given but names no node URI");
      }
      uris.stream()
          .filter(NodeSources::holdsPassword)
          .findFirst()
          .ifPresent(
              uri ->
                  err.println(
                      "redlock: warning: a password written in --nodes shows in ps and in the"
                          + " shell's history; put it in a config file only you can read"
                          + " (--config FILE or REDLOCK_CONFIG, nodes=...), or refer to an"
                          + " environment variable: --nodes '"
                          + NodeSources.passwordFromVariable(uri)
                          + "'"));
      return new Selection(uris, "--nodes", false, null, null);
    }
    if (config != null) {
      return NodeSources.fromConfigFile(config, "--config", err);
    }
    String nodesEnv = env.get(ConfiguredNodes.NODES_ENV);
    if (nodesEnv != null) {
      if (nodesEnv.isBlank()) {
        throw new CliException(
            ExitCodes.USAGE,
            "the environment variable "
                + ConfiguredNodes.NODES_ENV
                + " is set but empty; name the nodes in it (e.g."
                + " REDLOCK_NODES=redis://a:6379,redis://b:6379,redis://c:6379), or unset it for"
                + " the zero-setup quorum of SQLite files on this machine");
      }
      List<String> uris = ConfiguredNodes.split(nodesEnv);
      if (uris.isEmpty()) {
        throw new CliException(
            ExitCodes.USAGE,
            "the environment variable " + ConfiguredNodes.NODES_ENV + " names no node URI");
      }
      return new Selection(
          uris, "environment variable " + ConfiguredNodes.NODES_ENV, false, null, null);
    }
    String configEnv = env.get(ConfiguredNodes.CONFIG_ENV);
    if (configEnv != null) {
      if (configEnv.isBlank()) {
        throw new CliException(
            ExitCodes.USAGE,
            "the environment variable "
                + ConfiguredNodes.CONFIG_ENV
                + " is set but empty; point it at a properties file with nodes=..., or unset it");
      }
      return NodeSources.fromConfigFile(
          Path.of(configEnv), "environment variable " + ConfiguredNodes.CONFIG_ENV, err);
    }
    return zeroSetup(env, err);
  }

  /**
   * $XDG_DATA_HOME/redlock if that is an absolute path (as the XDG spec requires), else
   * ~/.local/share/redlock.
   */
  static Path dataDir(Map<String, String> env) {
    String xdg = env.get("XDG_DATA_HOME");
    Path base =
        xdg != null && !xdg.isBlank() && Path.of(xdg).isAbsolute()
            ? Path.of(xdg)
            : Path.of(System.getProperty("user.home"), ".local", "share");
    return base.resolve("redlock");
  }

  /** The SQLite URIs of the zero-setup quorum in {@code dir}. */
  static List<String> zeroSetupUris(Path dir) {
    List<String> uris = new ArrayList<>();
    for (int i = 1; i <= ZERO_SETUP_NODES; i++) {
      uris.add(
          "jdbc:sqlite:"
              + dir.resolve("node-" + i + ".db").toAbsolutePath()
              + "?redlock.createTable=true");
    }
    return uris;
  }

  private Selection zeroSetup(Map<String, String> env, PrintStream err) {
    Path dir = dataDir(env);
    try {
      if (!Files.isDirectory(dir)) {
        Files.createDirectories(dir);
        try {
          Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        } catch (UnsupportedOperationException notPosix) {
          // not a POSIX file system: keep the default permissions
        }
      }
    } catch (IOException e) {
      throw CliException.usage(
          "no nodes configured, and the zero-setup directory %s cannot be created (%s); set"
              + " XDG_DATA_HOME to a writable directory or configure nodes with --nodes",
          dir, e);
    }
    // Said once per data directory, not on every run: the README left beside the files marks it.
    Path marker = dir.resolve(ZERO_SETUP_MARKER);
    if (!Files.exists(marker) || verbose()) {
      err.printf(
          "redlock: no nodes configured (--nodes, --config or REDLOCK_NODES): using the zero-setup"
              + " quorum of %d SQLite files in %s (locks exclude processes on this machine only;"
              + " said once, see %s)%n",
          ZERO_SETUP_NODES, dir, marker);
      try {
        Files.writeString(
            marker,
            """
            These files are the zero-setup quorum of the redlock tool: %d SQLite files that
            it uses when no nodes are configured (--nodes, --config, REDLOCK_NODES or
            REDLOCK_CONFIG). Locks taken on them exclude processes on this machine only.
            While this file exists, redlock does not print that note again (-v does).
            Deleting the .db files while no lock is held is safe.
            """
                .formatted(ZERO_SETUP_NODES));
      } catch (IOException e) {
        // read-only directory: the note is simply printed again next time
      }
    }
    return new Selection(zeroSetupUris(dir), "zero-setup default in " + dir, true, null, null);
  }

  /**
   * A capability every node must declare for an option to work. Checked by the tool once the nodes
   * are open, so that the message speaks of the option rather than of the builder method.
   *
   * @param option the option that needs it, e.g. {@code --fencing}
   * @param has whether a node declares it
   * @param what what every node must do, completing "needs every node to ..."
   * @param declared the capability as a backend declares it, for backend authors
   */
  record Requirement(String option, Predicate<NodeCapabilities> has, String what, String declared) {
    /** {@code --fencing}: fencing counters. */
    static final Requirement FENCING =
        new Requirement(
            "--fencing",
            NodeCapabilities::fencing,
            "keep fencing counters",
            "capabilities().fencing()");

    /** {@code --quarantine}: status reports (incarnation, uptime, durability). */
    static final Requirement STATUS =
        new Requirement(
            "--quarantine",
            NodeCapabilities::status,
            "report its status (incarnation, uptime, durability) so that a restart is noticed",
            "capabilities().status()");

    /** The nodes (redacted names) that lack the capability. */
    List<String> missing(List<LockNode> nodes) {
      List<String> missing = new ArrayList<>();
      for (LockNode node : nodes) {
        if (!has.test(node.capabilities())) {
          missing.add(NodeUri.redact(node.name()));
        }
      }
      return missing;
    }

    /** The usage error for nodes that lack the capability. */
    String message(List<String> missing) {
      return "%s needs every node to %s, but %s not (%s is false): %s. Use backends that do"
              .formatted(
                  option,
                  what,
                  missing.size() == 1 ? "this node does" : "these nodes do",
                  declared,
                  String.join(", ", missing))
          + " (redis, jdbc:*, mongodb) for every node, or run without "
          + option;
    }

    /** Throws a usage error naming the nodes that lack the capability, if any do. */
    void check(List<LockNode> nodes, Selection selection) {
      List<String> missing = missing(nodes);
      if (!missing.isEmpty()) {
        throw new CliException(ExitCodes.USAGE, withSource(message(missing), selection));
      }
    }
  }

  /**
   * Builds a Redlock over the selection, its nodes opened and warmed up. Bad URIs and unknown
   * schemes become usage errors (64); nodes that cannot even be opened become 69.
   */
  Redlock build(Selection selection, UnaryOperator<RedlockBuilder> customize) {
    return build(selection, customize, List.of(), WARM_UP_TIMEOUT);
  }

  /**
   * Like {@link #build(Selection, UnaryOperator)}, and first checks that every node declares what
   * the {@code requirements} need (a usage error, 64, naming the nodes that do not); the warm-up
   * waits at most {@code warmUp}.
   */
  Redlock build(
      Selection selection,
      UnaryOperator<RedlockBuilder> customize,
      List<Requirement> requirements,
      Duration warmUp) {
    RedlockBuilder builder = Redlock.builder();
    List<LockNode> nodes;
    try {
      Duration timeout = nodeTimeout != null ? nodeTimeout : selection.nodeTimeout();
      if (timeout != null) {
        builder.nodeTimeout(timeout);
      }
      Double drift = driftFactor != null ? driftFactor : selection.driftFactor();
      if (drift != null) {
        builder.driftFactor(drift);
      }
      nodes = LockNodes.discover().openAll(selection.uris());
    } catch (IllegalArgumentException | RedlockNonTransientException e) {
      throw new CliException(ExitCodes.USAGE, withSource(e.getMessage(), selection), e);
    } catch (RedlockException e) {
      throw new CliException(ExitCodes.UNREACHABLE, withSource(e.getMessage(), selection), e);
    }
    try {
      for (Requirement requirement : requirements) {
        requirement.check(nodes, selection);
      }
      quietEngineLog();
      Redlock redlock = customize.apply(builder.nodes(nodes)).build();
      opened = nodes;
      warmUp(redlock, warmUp);
      return redlock;
    } catch (RuntimeException e) {
      LockNodes.closeQuietly(nodes, e);
      if (e instanceof NodesMisconfiguredException m) {
        throw new CliException(
            ExitCodes.CONFIG, withSource(RedlockCommand.misconfigured(m), selection), e);
      }
      // e.g. the same server listed twice (a quorum the engine refuses): the node list is wrong
      if (e instanceof IllegalArgumentException || e instanceof RedlockNonTransientException) {
        throw new CliException(ExitCodes.USAGE, withSource(e.getMessage(), selection), e);
      }
      throw e;
    }
  }

  /**
   * Warms the nodes up with the engine's probe ({@link Redlock#probe}): a lock cycle on a fresh key
   * and a status report per node, all at once. A tool starts cold (connections, lazy table
   * creation, a JVM that has not compiled anything yet), and a first attempt slower than the
   * per-node timeout would otherwise fail for no reason, which matters with {@code --no-wait}. The
   * probe runs in the background for at most {@link #WARM_UP_TIMEOUT}; this waits for it at most
   * {@code budget} (exec: not at all), so that a node that is down does not hold the tool up. Nodes
   * whose status says they are not durable are named when it ends ({@link #noteNotDurable}), unless
   * restart quarantine covers them; failures are left to the lock attempt, in the engine's words.
   */
  private void warmUp(Redlock redlock, Duration budget) {
    CompletableFuture<Void> probe =
        CompletableFuture.supplyAsync(() -> redlock.probe(WARM_UP_TIMEOUT))
            .thenAccept(
                reports -> {
                  if (!redlock.settings().restartQuarantineEnabled()) {
                    noteNotDurable(
                        reports.stream()
                            .filter(r -> r.status().map(s -> !s.durable()).orElse(false))
                            .map(NodeReport::node)
                            .toList());
                  }
                });
    try {
      probe.get(budget.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException | ExecutionException e) {
      // said when it ends; a node that fails is reported by the lock attempt
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The directory, beside the zero-setup files, whose files say which notes were said. */
  static final String SAID_DIR = "said";

  /**
   * Says once, not on every run (cron mails every run's stderr), that nodes keep their locks in
   * memory only, as the zero-setup note is said once: a file in the data directory lists the nodes
   * already named, so that only a node not named before is named again. With -v it is said every
   * time.
   */
  synchronized void noteNotDurable(List<String> notDurable) {
    if (notDurable.isEmpty()) {
      return;
    }
    Path marker = notesDir == null ? null : notesDir.resolve(SAID_DIR).resolve("not-durable");
    Set<String> said = new TreeSet<>();
    if (marker != null && Files.isRegularFile(marker)) {
      try {
        said.addAll(Files.readAllLines(marker));
      } catch (IOException e) {
        // unreadable: say it again
      }
    }
    List<String> news = notDurable.stream().filter(n -> !said.contains(n)).toList();
    if (news.isEmpty() && !verbose()) {
      return;
    }
    List<String> named = verbose() ? notDurable : news;
    err.printf(
        "redlock: note: %s locks in memory only: %s. If one restarts empty, a second client can be"
            + " granted a lock the first still holds: use --quarantine <your longest TTL>, or make"
            + " them durable (Redis: appendonly yes, appendfsync always)%s%n",
        named.size() == 1 ? "this node keeps its" : "these nodes keep their",
        String.join(", ", named),
        marker == null ? "" : " (said once, see " + marker + ")");
    if (marker != null && !news.isEmpty()) {
      said.addAll(news);
      try {
        Files.createDirectories(marker.getParent());
        List<String> lines = new ArrayList<>();
        lines.add(
            "# redlock said once that these nodes keep their locks in memory only (-v says it"
                + " every time); delete this file to hear it again");
        said.stream().filter(n -> !n.startsWith("#")).forEach(lines::add);
        Files.write(marker, lines);
      } catch (IOException e) {
        // a read-only directory: the note is simply said again next time
      }
    }
  }

  static String withSource(String message, Selection selection) {
    String hint =
        message != null && message.contains("no backend for scheme")
            ? " (the tool adds third-party backends from " + Plugins.ENV + ")"
            : "";
    return Plugins.usableSchemesOnly(message) + hint + " [nodes from " + selection.source() + "]";
  }
}
