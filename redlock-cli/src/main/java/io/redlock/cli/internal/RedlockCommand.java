package io.redlock.cli.internal;

import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.NodeUri;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** The {@code redlock} command: parses the arguments and maps every failure to an exit code. */
@Command(
    name = "redlock",
    mixinStandardHelpOptions = true,
    versionProvider = RedlockCommand.Version.class,
    subcommands = {ExecCommand.class, DoctorCommand.class, BenchCommand.class, HelpCommand.class},
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
      "  redlock doctor --json",
      "  redlock bench --ops 2000 --threads 4"
    })
public final class RedlockCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new ParameterException(
        spec.commandLine(), "missing subcommand: exec, doctor or bench (see redlock --help)");
  }

  /** Runs the tool with {@code args} and returns the exit code (does not exit). */
  public static int run(String... args) {
    CommandLine cmd = new CommandLine(new RedlockCommand());
    cmd.getSubcommands().get("exec").setStopAtPositional(true);
    Map<String, String> codes = new LinkedHashMap<>();
    for (String line : ExitCodes.HELP) {
      int colon = line.indexOf(':');
      codes.put(line.substring(0, colon), line.substring(colon + 1));
    }
    for (CommandLine c :
        List.of(
            cmd,
            cmd.getSubcommands().get("exec"),
            cmd.getSubcommands().get("doctor"),
            cmd.getSubcommands().get("bench"))) {
      c.getCommandSpec().usageMessage().exitCodeListHeading("%nExit codes:%n").exitCodeList(codes);
    }
    cmd.setParameterExceptionHandler(RedlockCommand::usageError);
    cmd.setExecutionExceptionHandler(
        (e, commandLine, parseResult) -> failure(e, commandLine.getErr()));
    return cmd.execute(args);
  }

  private static int usageError(ParameterException e, String[] args) {
    CommandLine cmd = e.getCommandLine();
    PrintWriter err = cmd.getErr();
    err.println("redlock: " + NodeUri.redact(e.getMessage()));
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
    err.println("redlock: " + NodeUri.redact(message));
    err.flush();
    return code;
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
