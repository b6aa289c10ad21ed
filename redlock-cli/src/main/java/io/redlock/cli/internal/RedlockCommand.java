package io.redlock.cli.internal;

import io.redlock.NodeFailure;
import io.redlock.NodesMisconfiguredException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.UsageMessageSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/** The {@code redlock} command: parses the arguments and maps every failure to an exit code. */
@Command(
    name = "redlock",
    mixinStandardHelpOptions = true,
    versionProvider = RedlockCommand.Version.class,
    subcommands = {
      ExecCommand.class,
      LeaseCommands.Extend.class,
      LeaseCommands.Release.class,
      InspectCommands.Status.class,
      InspectCommands.Unlock.class,
      DoctorCommand.class,
      BenchCommand.class,
      HelpCommand.class
    },
    description = {
      "Redlock distributed locks over any mix of Redis, JDBC and MongoDB nodes.",
      "With no nodes configured, a quorum of 3 SQLite files in ~/.local/share/redlock is used:"
          + " locks then exclude processes on this machine; point --nodes or REDLOCK_NODES at"
          + " real nodes to make them distributed."
    },
    footer = {
      "",
      "Examples:",
      "  redlock exec nightly-report -- ./make-report.sh",
      "  export REDLOCK_NODES=redis://a:6379,redis://b:6379,jdbc:postgresql://c/locks",
      "  redlock exec --ttl 1m job -- make",
      "  redlock extend job --token \"$REDLOCK_TOKEN\" --ttl 5m   # from inside the command",
      "  redlock status job                                # who holds it, and for how long",
      "  redlock doctor --json",
      "  redlock bench --ops 2000 --threads 4"
    })
public final class RedlockCommand implements Runnable {
  @Spec CommandSpec spec;

  /** The node options given before the subcommand: {@code redlock --nodes URIS exec ...}. */
  @Mixin NodeOptions before;

  /** Gives the node options given before the subcommand to it, where it did not set them. */
  private static void applyGlobalOptions(CommandLine.ParseResult parseResult) {
    if (!(parseResult.commandSpec().userObject() instanceof RedlockCommand top)
        || !parseResult.hasSubcommand()) {
      return;
    }
    CommandSpec sub = parseResult.subcommand().commandSpec();
    if (sub.mixins().get("nodeOptions") != null
        && sub.mixins().get("nodeOptions").userObject() instanceof NodeOptions o) {
      o.inherit(top.before);
    } else if (top.before.anyNodeOption()) {
      throw new ParameterException(sub.commandLine(), "this command takes no node options");
    }
  }

  @Override
  public void run() {
    throw new ParameterException(
        spec.commandLine(),
        "missing command; commands: " + commands(spec.commandLine()) + " (see redlock --help)");
  }

  /** The subcommands' names, in the order --help lists them. */
  static String commands(CommandLine top) {
    return String.join(", ", top.getSubcommands().keySet());
  }

  /**
   * Runs the tool with {@code args} and returns the exit code (does not exit). Backends on {@value
   * Plugins#ENV} are found through the context class loader while it runs.
   */
  public static int run(String... args) {
    // An unknown host is looked up afresh each time, so that every report of it (doctor's two
    // looks at the nodes, which race) has the resolver's own words, not the cache's shorter ones.
    java.security.Security.setProperty("networkaddress.cache.negative.ttl", "0");
    Thread thread = Thread.currentThread();
    ClassLoader previous = thread.getContextClassLoader();
    try {
      thread.setContextClassLoader(
          Plugins.loader(System.getenv(Plugins.ENV), RedlockCommand.class.getClassLoader()));
      return execute(args);
    } catch (CliException e) {
      return failure(e, new PrintWriter(System.err, true));
    } finally {
      thread.setContextClassLoader(previous);
    }
  }

  private static int execute(String... args) {
    CommandLine cmd = new CommandLine(new RedlockCommand());
    cmd.getSubcommands().get("exec").setStopAtPositional(true);
    Map<String, String> codes = table(ExitCodes.HELP);
    List<CommandLine> commands = new ArrayList<>();
    commands.add(cmd);
    cmd.getSubcommands().forEach((name, c) -> commands.add(c));
    for (CommandLine c : commands) {
      c.getCommandSpec().usageMessage().exitCodeListHeading("%nExit codes:%n").exitCodeList(codes);
      boolean exec = c == cmd.getSubcommands().get("exec");
      addEnvironmentSection(c, exec || c == cmd);
    }
    cmd.setParameterExceptionHandler(RedlockCommand::usageError);
    cmd.setExecutionStrategy(
        parseResult -> {
          applyGlobalOptions(parseResult);
          return new CommandLine.RunLast().execute(parseResult);
        });
    cmd.setExecutionExceptionHandler(
        (e, commandLine, parseResult) -> failure(e, commandLine.getErr()));
    return cmd.execute(args);
  }

  /** The variables exec sets for the command, shown by {@code --help}. */
  static final String[] COMMAND_ENVIRONMENT = {
    "REDLOCK_LOCK_NAME:the lock's name (LOCKNAME)",
    "REDLOCK_TOKEN:the lease's random token (at least 128 bits, URL-safe); 'redlock extend' and"
        + " 'redlock release' use it",
    "REDLOCK_TTL_MS:the lock's TTL in milliseconds",
    "REDLOCK_EXEC_SOCKET:where the redlock commands the command runs reach this exec (a Unix"
        + " socket only its user may open): extend and release of its lease are done by exec,"
        + " which then renews with the TTL asked; other commands get exec's nodes from it",
    "REDLOCK_FENCING_TOKEN:with --fencing only: the lease's fencing token, a positive integer"
        + " greater than that of every earlier holder of the lock; send it with every write and"
        + " have the protected resource refuse lower ones",
  };

  /** The variables the tool reads, shown by {@code --help}. */
  static final String[] TOOL_ENVIRONMENT = {
    "REDLOCK_NODES:node URIs, comma or space separated (when --nodes and --config are not given);"
        + " set but empty is an error (unset it for the zero-setup default). In any node URI,"
        + " ${VAR} is replaced by the environment variable VAR, e.g."
        + " redis://:${REDIS_PASSWORD}@a:6379: a password kept out of ps, and out of the"
        + " environment of the command run by exec",
    "REDLOCK_CONFIG:a properties file with nodes= (and node-timeout=, drift-factor=); with"
        + " passwords in it, make it readable by you only (chmod 600)",
    "REDLOCK_TOKEN:extend, release: the token, when --token is not given",
    "XDG_DATA_HOME:where the zero-setup SQLite files go: $XDG_DATA_HOME/redlock"
        + " (default ~/.local/share/redlock)",
    Plugins.ENV
        + ":third-party backends: jars or class folders, separated by '"
        + java.io.File.pathSeparator
        + "' ('dir/*': every jar in dir), each registering an io.redlock.spi.LockNodeProvider in"
        + " META-INF/services; 'redlock doctor' lists where each backend was loaded from",
  };

  private static final String ENVIRONMENT_SECTION = "redlockEnvironment";

  /** An environment table after the exit codes (and before the examples). */
  private static void addEnvironmentSection(CommandLine c, boolean commandEnvironment) {
    c.getHelpSectionMap()
        .put(
            ENVIRONMENT_SECTION,
            help -> {
              StringBuilder sb = new StringBuilder();
              if (commandEnvironment) {
                sb.append(help.createHeading("%nEnvironment of the command run by exec:%n"));
                sb.append(help.createTextTable(table(COMMAND_ENVIRONMENT)));
              }
              sb.append(help.createHeading("%nEnvironment read by redlock:%n"));
              sb.append(help.createTextTable(table(TOOL_ENVIRONMENT)));
              return sb.toString();
            });
    List<String> keys = new ArrayList<>(c.getHelpSectionKeys());
    // setHelpSectionKeys also applies to the subcommands: add the key once per command
    keys.remove(ENVIRONMENT_SECTION);
    keys.add(keys.indexOf(UsageMessageSpec.SECTION_KEY_FOOTER_HEADING), ENVIRONMENT_SECTION);
    c.setHelpSectionKeys(keys);
  }

  private static Map<String, String> table(String[] lines) {
    Map<String, String> map = new LinkedHashMap<>();
    for (String line : lines) {
      int colon = line.indexOf(':');
      map.put(line.substring(0, colon), line.substring(colon + 1));
    }
    return map;
  }

  private static int usageError(ParameterException e, String[] args) {
    CommandLine cmd = e.getCommandLine();
    PrintWriter err = cmd.getErr();
    String message = e.getMessage();
    if (e instanceof UnmatchedArgumentException u
        && cmd.getParent() == null
        && !u.getUnmatched().isEmpty()
        && !u.getUnmatched().get(0).startsWith("-")) {
      message = "unknown command '" + u.getUnmatched().get(0) + "'; commands: " + commands(cmd);
    }
    err.println("redlock: " + CliWords.tell(message));
    err.println("Run '" + cmd.getCommandSpec().qualifiedName() + " --help' for usage.");
    err.flush();
    return ExitCodes.USAGE;
  }

  /** One line on stderr and an exit code for every failure that reaches the top. */
  static int failure(Exception e, PrintWriter err) {
    int code;
    String message;
    if (e instanceof CliException cli) {
      code = cli.exitCode();
      message = cli.getMessage();
    } else if (e instanceof NodesMisconfiguredException m) {
      code = ExitCodes.CONFIG;
      message = misconfigured(m);
    } else if (e instanceof IllegalArgumentException || e instanceof RedlockNonTransientException) {
      code = ExitCodes.USAGE;
      message = e.getMessage();
    } else if (e instanceof RedlockTransientException) {
      code = ExitCodes.UNREACHABLE;
      message = e.getMessage();
    } else {
      code = ExitCodes.INTERNAL;
      message = "internal error (please report it): " + e;
      e.printStackTrace(err);
    }
    err.println("redlock: " + CliWords.tell(message));
    err.flush();
    return code;
  }

  /**
   * A {@link NodesMisconfiguredException} in lines: what it stopped, then one line per node with
   * its cause, for exit code 78.
   */
  static String misconfigured(NodesMisconfiguredException m) {
    String message = String.valueOf(m.getMessage());
    int detail =
        m.failures().isEmpty() ? -1 : message.indexOf(": " + m.failures().get(0).toString());
    StringBuilder sb =
        new StringBuilder("nodes misconfigured: ")
            .append(detail > 0 ? message.substring(0, detail) : message);
    List<String> causes = new ArrayList<>();
    for (NodeFailure f : m.failures()) {
      causes.add(f.toString());
    }
    for (String cause : CliWords.blocksOnce(causes)) {
      sb.append(System.lineSeparator()).append("redlock:   ").append(cause);
    }
    return sb.toString();
  }

  /** The version from the jar's manifest. */
  static final class Version implements IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = RedlockCommand.class.getPackage().getImplementationVersion();
      return new String[] {
        "redlock " + (v == null ? "(development build)" : v),
        "Java "
            + System.getProperty("java.version")
            + " ("
            + System.getProperty("java.vm.name")
            + ")"
      };
    }
  }
}
