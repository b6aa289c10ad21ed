package io.redlock.cli;

import io.redlock.cli.internal.RedlockCommand;

/**
 * Entry point of the {@code redlock} command-line tool: {@code exec} runs a command while holding a
 * Redlock, {@code doctor} checks the nodes and the timing assumptions, {@code bench} measures
 * throughput and latency. Run {@code redlock --help} for the options and the exit codes.
 */
public final class Main {
  private Main() {}

  /** Runs the tool and exits with its exit code. */
  public static void main(String[] args) {
    System.exit(RedlockCommand.run(args));
  }
}
