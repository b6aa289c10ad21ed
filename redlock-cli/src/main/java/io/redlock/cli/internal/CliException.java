package io.redlock.cli.internal;

/** A failure the tool reports in one line on stderr and turns into an exit code. */
final class CliException extends RuntimeException {
  private final int exitCode;

  CliException(int exitCode, String message) {
    this(exitCode, message, null);
  }

  CliException(int exitCode, String message, Throwable cause) {
    super(message, cause);
    this.exitCode = exitCode;
  }

  /** A usage error (exit 64): the message is {@code format} with {@code args}. */
  static CliException usage(String format, Object... args) {
    return new CliException(ExitCodes.USAGE, format.formatted(args));
  }

  int exitCode() {
    return exitCode;
  }
}
