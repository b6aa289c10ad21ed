package io.redlock.cli.internal;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
 * The command's own children are not covered by that signal: a {@link Watchdog} stops them.
 */
final class Child {
  private Child() {}

  /** Where setpriv lives when it is not on the PATH. */
  private static final String SETPRIV_DIRS = "/usr/bin:/bin:/usr/sbin";

  /**
   * The words to put before the command so that it dies with redlock, or empty where that cannot be
   * done (not Linux, no setpriv, or a setpriv without --pdeathsig: util-linux before 2.33).
   */
  static List<String> dieWithParentPrefix(String path) {
    if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
      return List.of();
    }
    Optional<Path> setpriv =
        find("setpriv", path == null ? SETPRIV_DIRS : path + File.pathSeparator + SETPRIV_DIRS);
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

  /**
   * The watchdog's script. It ignores the signals a terminal or a parent sends to a whole process
   * group, reads the lease's token (never on a command line, where ps would show it), then waits
   * for a second line. A line means the command ended on its own: nothing to do. End of file means
   * redlock is gone without saying so (SIGKILL, the OOM killer, a crash): the kernel closed the
   * pipe's write end, which only redlock held. The watchdog then stops every process whose
   * environment holds the token, which exec gives the command and its descendants inherit: SIGTERM,
   * SIGKILL after the grace ($1 seconds) to those still there, and again (bounded) for any that
   * were being forked meanwhile. This finds them wherever they went: reparented, in a process group
   * or session of their own (setsid, a shell's job control).
   */
  static final String WATCHDOG_SCRIPT =
      "trap '' HUP INT QUIT TERM PIPE\n"
          + "IFS= read -r t || exit 0\n"
          + "IFS= read -r d && exit 0\n"
          + "s=TERM\n"
          + "for r in 1 2 3 4 5 6 7 8 9 10; do\n"
          + "  p=$(printf 'REDLOCK_TOKEN=%s\\n' \"$t\" | grep -lzxFf - /proc/[0-9]*/environ 2>/dev/null"
          + " | sed -n 's|^/proc/\\([0-9][0-9]*\\)/environ$|\\1|p')\n"
          + "  [ -n \"$p\" ] || exit 0\n"
          + "  kill -$s $p 2>/dev/null\n"
          + "  if [ $s = TERM ]; then sleep \"$1\"; s=KILL; else sleep 0.2; fi\n"
          + "done\n";

  /** Where the watchdog's tools are looked for first: not wherever the user's PATH points. */
  private static final String WATCHDOG_PATH = "/usr/bin:/bin";

  /**
   * A process that outlives redlock to stop the command and everything it started when redlock dies
   * without stopping them itself (SIGKILL, OOM killer): {@code setpriv --pdeathsig} takes only the
   * command, not its children. Linux only (it reads {@code /proc/PID/environ}); needs {@code sh},
   * {@code grep}, {@code sed}, {@code kill} and {@code sleep}, present on every Debian.
   */
  static final class Watchdog {
    private final Process process;
    private final OutputStream pipe;

    private Watchdog(Process process, OutputStream pipe) {
      this.process = process;
      this.pipe = pipe;
    }

    /**
     * Starts the watchdog for the processes whose environment holds {@code REDLOCK_TOKEN=token},
     * with {@code grace} between SIGTERM and SIGKILL; empty where it cannot run (not Linux, no
     * /proc, no sh). Start it before the command, so that no descendant can come before it.
     */
    static Optional<Watchdog> start(String token, Duration grace, String path) {
      if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")
          || !Files.isReadable(Path.of("/proc/self/environ"))) {
        return Optional.empty();
      }
      Path sh = Path.of("/bin/sh");
      if (!Files.isExecutable(sh)) {
        return Optional.empty();
      }
      long millis = Math.max(0, Math.min(grace.toMillis(), 60_000));
      String seconds = String.format(Locale.ROOT, "%d.%03d", millis / 1000, millis % 1000);
      ProcessBuilder pb =
          new ProcessBuilder(sh.toString(), "-c", WATCHDOG_SCRIPT, "redlock-watchdog", seconds)
              .redirectInput(ProcessBuilder.Redirect.PIPE)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .redirectError(ProcessBuilder.Redirect.DISCARD);
      // Nothing of redlock's environment: no token (it would mark the watchdog as a target, or an
      // outer exec's watchdog's), no credentials.
      pb.environment().clear();
      pb.environment()
          .put("PATH", path == null || path.isEmpty() ? WATCHDOG_PATH : WATCHDOG_PATH + ":" + path);
      try {
        Process p = pb.start();
        OutputStream out = p.getOutputStream();
        out.write((token + "\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        return Optional.of(new Watchdog(p, out));
      } catch (IOException e) {
        return Optional.empty();
      }
    }

    /** The command ended on its own: the watchdog exits without stopping anything. */
    void disarm() {
      try {
        pipe.write("done\n".getBytes(StandardCharsets.US_ASCII));
        pipe.close();
      } catch (IOException gone) {
        process.destroy();
      }
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

  /** SIGTERM to the command and its descendants, SIGKILL after the grace period. */
  static void terminate(Process command, Duration g, PrintStream err) {
    List<ProcessHandle> family = command.descendants().toList(); // before they are orphaned
    command.destroy();
    family.forEach(ProcessHandle::destroy);
    try {
      if (!command.waitFor(g.toMillis(), TimeUnit.MILLISECONDS)) {
        err.println(
            "redlock: the command did not stop within "
                + Durations.human(g)
                + " of SIGTERM; killing it");
        command.destroyForcibly();
        command.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      command.destroyForcibly();
    }
    family.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
  }

  /** Waits for the command to end; a signal handler's interrupt does not stop the wait. */
  static int waitFor(Process process) {
    while (true) {
      try {
        return process.waitFor();
      } catch (InterruptedException e) {
        // only the signal handler interrupts, and it stops the process: keep waiting for it
        if (!process.isAlive()) {
          return process.exitValue();
        }
      }
    }
  }

  /** Says why the command could not be started; its exit code, as a shell gives it. */
  static int cannotStart(String program, IOException e, PrintStream err) {
    String message = String.valueOf(e.getMessage());
    boolean notFound = message.contains("error=2,") || message.contains("No such file");
    err.println(
        "redlock: cannot run '"
            + program
            + "': "
            + (notFound ? "command not found" : message)
            + " (the lock was released)");
    return notFound ? ExitCodes.NOT_FOUND : ExitCodes.CANNOT_EXECUTE;
  }
}
