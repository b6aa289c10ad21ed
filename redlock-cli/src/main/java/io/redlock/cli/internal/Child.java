package io.redlock.cli.internal;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * How exec starts its command so that it dies with redlock: on Linux through {@code setpriv
 * --pdeathsig KILL} (util-linux), which sets {@code PR_SET_PDEATHSIG} and then executes the
 * command, so the kernel kills the command when redlock dies, even by SIGKILL or the OOM killer.
 * The signal is tied to the thread that started the command, which is the thread that waits for it.
 */
final class Child {
  private Child() {}

  /** Where setpriv lives when it is not on the PATH. */
  private static final List<String> SETPRIV_DIRS = List.of("/usr/bin", "/bin", "/usr/sbin");

  /**
   * The words to put before the command so that it dies with redlock, or empty where that cannot be
   * done (not Linux, no setpriv, or a setpriv without --pdeathsig: util-linux before 2.33).
   */
  static List<String> dieWithParentPrefix(String path) {
    if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
      return List.of();
    }
    Optional<Path> setpriv = find("setpriv", path);
    if (setpriv.isEmpty()) {
      for (String dir : SETPRIV_DIRS) {
        Path p = Path.of(dir, "setpriv");
        if (Files.isExecutable(p)) {
          setpriv = Optional.of(p);
          break;
        }
      }
    }
    if (setpriv.isEmpty() || !works(setpriv.get())) {
      return List.of();
    }
    return List.of(setpriv.get().toString(), "--pdeathsig", "KILL", "--");
  }

  /** One run of {@code setpriv --pdeathsig KILL -- true}: a few milliseconds. */
  private static boolean works(Path setpriv) {
    try {
      Process p =
          new ProcessBuilder(setpriv.toString(), "--pdeathsig", "KILL", "--", "true")
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      if (!p.waitFor(2, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return false;
      }
      return p.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Why {@code program} cannot be run, as the shell would say it, with its exit code. */
  record Problem(int exitCode, String message) {}

  /**
   * Checks that {@code program} can be executed, as the shell does before running it: a name with a
   * slash is taken as a path, any other name is looked up on {@code path}. Empty if it can.
   */
  static Optional<Problem> check(String program, String path) {
    if (program.contains("/")) {
      Path p = Path.of(program);
      if (!Files.exists(p)) {
        return Optional.of(new Problem(ExitCodes.NOT_FOUND, "command not found"));
      }
      if (Files.isDirectory(p) || !Files.isExecutable(p)) {
        return Optional.of(
            new Problem(
                ExitCodes.CANNOT_EXECUTE,
                Files.isDirectory(p) ? "is a directory" : "permission denied"));
      }
      return Optional.empty();
    }
    if (find(program, path).isPresent()) {
      return Optional.empty();
    }
    for (String dir : dirs(path)) {
      if (Files.isRegularFile(Path.of(dir, program))) {
        return Optional.of(new Problem(ExitCodes.CANNOT_EXECUTE, "permission denied"));
      }
    }
    return Optional.of(new Problem(ExitCodes.NOT_FOUND, "command not found"));
  }

  /** The first executable file named {@code name} on {@code path}. */
  static Optional<Path> find(String name, String path) {
    for (String dir : dirs(path)) {
      Path p = Path.of(dir, name);
      if (Files.isRegularFile(p) && Files.isExecutable(p)) {
        return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  private static List<String> dirs(String path) {
    List<String> out = new ArrayList<>();
    for (String dir : (path == null ? "" : path).split(File.pathSeparator, -1)) {
      out.add(dir.isEmpty() ? "." : dir);
    }
    return out;
  }
}
