package io.redlock.cli.internal;

import io.redlock.NodeTimeoutException;
import io.redlock.Redlock;
import io.redlock.RedlockBuilder;
import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodes;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
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

  /** The longest the warm-up round trip may take before the first lock attempt. */
  static final Duration WARM_UP_TIMEOUT = Duration.ofSeconds(5);

  /** How many SQLite files make the zero-setup quorum. */
  static final int ZERO_SETUP_NODES = 3;

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
          "How long one node may take to answer one call. Default: TTL/200 within [10ms, 1s].")
  Duration nodeTimeout;

  @Option(
      names = "--drift-factor",
      paramLabel = "FRACTION",
      description = "Share of the TTL allowed for clock drift. Default: 0.01.")
  Double driftFactor;

  @Option(
      names = {"-v", "--verbose"},
      description = "Say more on stderr, including the libraries' debug logs.")
  void verbose(boolean on) {
    this.verbose = on;
    if (on) {
      // Read by slf4j-simple when the first logger is made, which is after option parsing.
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "debug");
      System.setProperty("org.slf4j.simpleLogger.log.com.zaxxer.hikari", "info");
      System.setProperty("org.slf4j.simpleLogger.log.org.mongodb", "info");
    }
  }

  boolean verbose;

  /**
   * The nodes to use and where they came from.
   *
   * @param uris the URIs (may hold passwords: never print them raw)
   * @param source where they were configured, for messages
   * @param zeroSetup true for the embedded SQLite default
   * @param nodeTimeout from a config file, if it set one
   * @param driftFactor from a config file, if it set one
   */
  record Selection(
      List<String> uris,
      String source,
      boolean zeroSetup,
      Duration nodeTimeout,
      Double driftFactor) {}

  /**
   * Resolves the nodes; with none configured, prepares the zero-setup quorum and says so on {@code
   * err}.
   */
  Selection select(Map<String, String> env, PrintStream err) {
    if (nodes != null && !nodes.isEmpty()) {
      List<String> uris = new ArrayList<>();
      for (String list : nodes) {
        uris.addAll(LockNodes.splitList(list));
      }
      if (uris.isEmpty()) {
        throw new CliException(ExitCodes.USAGE, "--nodes was given but names no node URI");
      }
      return new Selection(uris, "--nodes", false, null, null);
    }
    if (config != null) {
      return fromConfigFile(config, "--config");
    }
    String nodesEnv = env.get(LockNodes.NODES_ENV);
    if (nodesEnv != null && !nodesEnv.isBlank()) {
      return new Selection(
          LockNodes.splitList(nodesEnv),
          "environment variable " + LockNodes.NODES_ENV,
          false,
          null,
          null);
    }
    String configEnv = env.get(LockNodes.CONFIG_ENV);
    if (configEnv != null && !configEnv.isBlank()) {
      return fromConfigFile(Path.of(configEnv), "environment variable " + LockNodes.CONFIG_ENV);
    }
    return zeroSetup(env, err);
  }

  private static Selection fromConfigFile(Path file, String namedBy) {
    Properties p = LockNodes.readProperties(file, namedBy);
    Set<String> unknown = new TreeSet<>(p.stringPropertyNames());
    unknown.removeAll(CONFIG_KEYS);
    if (!unknown.isEmpty()) {
      throw new CliException(
          ExitCodes.USAGE,
          "the config file "
              + file
              + " has unknown keys "
              + unknown
              + "; known keys: "
              + new TreeSet<>(CONFIG_KEYS));
    }
    LockNodes.Configured c = LockNodes.fromFile(file, namedBy);
    Duration timeout = null;
    if (p.getProperty("node-timeout") != null) {
      try {
        timeout = Durations.parse(p.getProperty("node-timeout"));
      } catch (IllegalArgumentException e) {
        throw new CliException(
            ExitCodes.USAGE, "node-timeout in " + file + ": " + e.getMessage(), e);
      }
    }
    Double drift = null;
    if (p.getProperty("drift-factor") != null) {
      try {
        drift = Double.valueOf(p.getProperty("drift-factor").strip());
      } catch (NumberFormatException e) {
        throw new CliException(
            ExitCodes.USAGE,
            "drift-factor in "
                + file
                + " must be a number such as 0.01, got '"
                + p.getProperty("drift-factor")
                + "'",
            e);
      }
    }
    return new Selection(c.uris(), c.source(), false, timeout, drift);
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
      throw new CliException(
          ExitCodes.USAGE,
          "no nodes configured, and the zero-setup directory "
              + dir
              + " cannot be created ("
              + e
              + "); set XDG_DATA_HOME to a writable directory or configure nodes with --nodes",
          e);
    }
    err.println(
        "redlock: no nodes configured (--nodes, --config or REDLOCK_NODES): using the zero-setup"
            + " quorum of "
            + ZERO_SETUP_NODES
            + " SQLite files in "
            + dir
            + " (locks exclude processes on this machine only)");
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
      return option
          + " needs every node to "
          + what
          + ", but "
          + (missing.size() == 1 ? "this node does" : "these nodes do")
          + " not ("
          + declared
          + " is false): "
          + String.join(", ", missing)
          + ". Use backends that do (redis, jdbc:*, mongodb) for every node, or run without "
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
    return build(selection, customize, List.of());
  }

  /**
   * Like {@link #build(Selection, UnaryOperator)}, and first checks that every node declares what
   * the {@code requirements} need (a usage error, 64, naming the nodes that do not).
   */
  Redlock build(
      Selection selection,
      UnaryOperator<RedlockBuilder> customize,
      List<Requirement> requirements) {
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
      warmUp(nodes, requirements.contains(Requirement.STATUS));
      return customize.apply(builder.nodes(nodes)).build();
    } catch (RuntimeException e) {
      LockNodes.closeQuietly(nodes, e);
      if (e instanceof IllegalArgumentException || e instanceof RedlockNonTransientException) {
        throw new CliException(ExitCodes.USAGE, withSource(e.getMessage(), selection), e);
      }
      throw e;
    }
  }

  /**
   * One harmless round trip per node, in parallel, before the first lock attempt: a
   * compare-and-delete of a random key that cannot exist, and with {@code status} also a status
   * report (which restart quarantine reads in the same attempt, against the same deadline). A tool
   * starts cold (connections, lazy table creation, a JVM that has not compiled anything yet), and a
   * first attempt slower than the per-node timeout would otherwise fail for no reason, which
   * matters with {@code --no-wait}. Failures are ignored here: a node that is down is counted as
   * such by the lock attempt itself.
   */
  static void warmUp(List<LockNode> nodes, boolean status) {
    String key = "redlock-warmup:" + UUID.randomUUID();
    String token = UUID.randomUUID().toString();
    List<Reply<?>> replies = new ArrayList<>();
    for (LockNode node : nodes) {
      try {
        replies.add(node.release(key, token));
        if (status && node.capabilities().status()) {
          replies.add(node.status());
        }
      } catch (RuntimeException e) {
        // reported by the lock attempt, with the engine's wording
      }
    }
    long deadline = System.nanoTime() + WARM_UP_TIMEOUT.toNanos();
    for (Reply<?> reply : replies) {
      try {
        reply.await(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
      } catch (NodeTimeoutException e) {
        reply.abandon(late -> {});
      } catch (RuntimeException e) {
        if (Thread.currentThread().isInterrupted()) {
          reply.abandon(late -> {}); // the call may still go out: let the backend clean up
        }
        // otherwise reported by the lock attempt, with the engine's wording
      }
    }
  }

  static String withSource(String message, Selection selection) {
    String hint =
        message != null && message.contains("no backend for scheme")
            ? " (the tool adds third-party backends from " + Plugins.ENV + ")"
            : "";
    return message + hint + " [nodes from " + selection.source() + "]";
  }
}
