package io.redlock.cli;

import static io.redlock.cli.CliProcess.awaitFile;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * {@code redlock exec} run as a real process on the zero-setup default (three SQLite files in a
 * per-test XDG_DATA_HOME), as a user would run it.
 */
@DisplayName("redlock exec, as a process")
class ExecIT {
  private Path dir;
  private Map<String, String> env;

  @BeforeEach
  void setUp(TestInfo info) throws IOException {
    dir = CliProcess.testDir(info);
    env = Map.of("XDG_DATA_HOME", dir.resolve("xdg").toString());
  }

  private CliProcess redlock(String... args) {
    return CliProcess.start(dir, env, args);
  }

  /** Waits (bounded) until the file exists; fails with the process's output otherwise. */
  @Test
  @DisplayName("passes the command's exit code through and exports the lock name and token")
  void exitCodeAndEnvironment() {
    try (CliProcess p =
        redlock(
            "exec",
            "it-lock",
            "--",
            "sh",
            "-c",
            "echo \"$REDLOCK_LOCK_NAME $REDLOCK_TOKEN\"; exit 7")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(7);
      assertThat(p.out().strip()).matches("it-lock [A-Za-z0-9_-]{26,}");
      assertThat(p.err())
          .as("the zero-setup notice, once")
          .containsOnlyOnce("no nodes configured")
          .contains(
              "zero-setup quorum of 3 SQLite files in " + dir.resolve("xdg").resolve("redlock"));
    }
    assertThat(dir.resolve("xdg/redlock/node-1.db")).isRegularFile();
  }

  /** Runs {@code exec ARGS... -- sh -c 'echo $REDLOCK_FENCING_TOKEN'} and returns the token. */
  static long fencingToken(CliProcess p) {
    assertThat(p.exitCode()).as(p.toString()).isZero();
    String out = p.out().strip();
    assertThat(out).as(p.toString()).matches("[1-9][0-9]*");
    return Long.parseLong(out);
  }

  @Test
  @DisplayName(
      "--fencing exports REDLOCK_FENCING_TOKEN, and successive execs get strictly increasing"
          + " tokens")
  void fencingTokens() {
    List<Long> tokens = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      try (CliProcess p =
          redlock("exec", "--fencing", "fenced", "--", "sh", "-c", "echo $REDLOCK_FENCING_TOKEN")) {
        tokens.add(fencingToken(p));
      }
    }
    assertThat(tokens).doesNotHaveDuplicates().isSorted();
    // Without --fencing there is none, not even one inherited from an outer exec.
    Map<String, String> outer = new HashMap<>(env);
    outer.put("REDLOCK_FENCING_TOKEN", "12345");
    try (CliProcess p =
        CliProcess.start(
            dir,
            outer,
            "exec",
            "fenced",
            "--",
            "sh",
            "-c",
            "echo ${REDLOCK_FENCING_TOKEN-unset}")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.out().strip()).isEqualTo("unset");
    }
  }

  @Test
  @DisplayName(
      "--fencing and --quarantine exit 64 naming a node that lacks what they need; without them"
          + " the same nodes lock")
  void capabilitiesChecked() throws IOException {
    Path files = Files.createDirectories(dir.resolve("plain"));
    // Spaces: after a comma, only scheme:// or jdbc: starts the next URI, and nocaps: does not.
    String nodes =
        String.join(
            " ",
            "jdbc:sqlite:" + files.resolve("a.db") + "?redlock.createTable=true",
            "jdbc:sqlite:" + files.resolve("b.db") + "?redlock.createTable=true",
            "nocaps:jdbc:sqlite:" + files.resolve("c.db") + "?redlock.createTable=true");
    try (CliProcess p =
        CliProcess.startWithPlugin(dir, env, "exec", "--nodes", nodes, "caps", "--", "true")) {
      assertThat(p.exitCode()).as("the third-party node works for plain locks: " + p).isZero();
    }
    try (CliProcess p =
        CliProcess.startWithPlugin(
            dir, env, "exec", "--fencing", "--nodes", nodes, "caps", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err())
          .contains(
              "--fencing needs every node to keep fencing counters, but this node does not"
                  + " (capabilities().fencing() is false): nocaps:jdbc:sqlite:"
                  + files,
              "or run without --fencing",
              "[nodes from --nodes]")
          .doesNotContain("a.db?");
    }
    try (CliProcess p =
        CliProcess.startWithPlugin(
            dir, env, "exec", "--quarantine", "1m", "--nodes", nodes, "caps", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err())
          .contains(
              "--quarantine needs every node to report its status",
              "nocaps:jdbc:sqlite:",
              "or run without --quarantine");
    }
  }

  @Test
  @DisplayName("--quarantine lets the durable zero-setup files vote at once, not after 1 minute")
  void quarantineOnDurableNodes() {
    // Were they quarantined, no attempt could succeed within the 30 s wait (exit 69).
    try (CliProcess p =
        redlock("exec", "--wait", "30s", "--quarantine", "1m", "q", "--", "sh", "-c", "echo ran")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.out().strip()).isEqualTo("ran");
      assertThat(p.err()).as("no node left out").doesNotContain("restart quarantine");
    }
  }

  @Test
  @DisplayName("two execs of one lock serialize: the second waits; with --no-wait it exits 75")
  void concurrentExecsSerialize() throws Exception {
    Path log = dir.resolve("log");
    // Each command holds until the test creates release-NAME (bounded at 60 s).
    String script =
        "echo start-$0 >> log; touch started-$0; i=0;"
            + " while [ ! -f release-$0 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done;"
            + " echo end-$0 >> log";
    Files.createFile(dir.resolve("release-B"));
    try (CliProcess a = redlock("exec", "shared", "--", "sh", "-c", script, "A")) {
      awaitFile(dir.resolve("started-A"), a);
      try (CliProcess b =
          redlock("exec", "--wait", "60s", "shared", "--", "sh", "-c", script, "B")) {
        try (CliProcess c = redlock("exec", "--no-wait", "shared", "--", "sh", "-c", script, "C")) {
          assertThat(c.exitCode()).as(c.toString()).isEqualTo(75);
          assertThat(c.err()).contains("lock busy", "held by another client");
        }
        assertThat(dir.resolve("started-B")).as("B waits while A holds the lock").doesNotExist();
        assertThat(b.process.isAlive()).as(b.toString()).isTrue();
        Files.createFile(dir.resolve("release-A"));
        assertThat(a.exitCode()).as(a.toString()).isZero();
        assertThat(b.exitCode()).as(b.toString()).isZero();
      }
    }
    assertThat(Files.readAllLines(log)).containsExactly("start-A", "end-A", "start-B", "end-B");
  }

  @Test
  @DisplayName("SIGTERM stops the command and releases the lock: the next exec gets it at once")
  void sigtermReleases() throws Exception {
    Path pidFile = dir.resolve("child.pid");
    try (CliProcess a =
        redlock(
            "exec",
            "--ttl",
            "60s",
            "term-lock",
            "--",
            "sh",
            "-c",
            "echo $$ > child.pid.tmp; mv child.pid.tmp child.pid; exec sleep 120")) {
      awaitFile(pidFile, a);
      long childPid = Long.parseLong(Files.readString(pidFile).strip());
      assertThat(ProcessHandle.of(childPid)).as("the command runs").isPresent();

      a.signal("TERM");

      assertThat(a.exitCode(Duration.ofSeconds(30))).as(a.toString()).isEqualTo(143);
      assertThat(a.err()).contains("interrupted: stopping the command and releasing 'term-lock'");
      assertThat(ProcessHandle.of(childPid).map(ProcessHandle::isAlive).orElse(false))
          .as("the command was stopped")
          .isFalse();
    }
    // The TTL is 60 s: only a release lets this single attempt succeed now.
    try (CliProcess b = redlock("exec", "--no-wait", "term-lock", "--", "true")) {
      assertThat(b.exitCode()).as(b.toString()).isZero();
    }
  }

  @Test
  @DisplayName(
      "a lock lost while the command runs is reported loudly with its real cause (here: this"
          + " process was paused), the command stopped, exit 79")
  void lostLock() throws Exception {
    try (CliProcess a =
        redlock(
            "exec",
            "--ttl",
            "2s",
            "lost-lock",
            "--",
            "sh",
            "-c",
            "touch started-A; exec sleep 60")) {
      awaitFile(dir.resolve("started-A"), a);
      // Freeze the holder past its TTL, as a long GC pause or a suspended VM would.
      a.signal("STOP");
      try (CliProcess b =
          redlock(
              "exec", "--wait", "30s", "lost-lock", "--", "sh", "-c", "touch started-B; sleep 4")) {
        try {
          awaitFile(dir.resolve("started-B"), b);
        } finally {
          a.signal("CONT");
        }
        assertThat(a.exitCode(Duration.ofSeconds(30))).as(a.toString()).isEqualTo(79);
        assertThat(a.err())
            .contains("LOCK LOST: 'lost-lock'", "Stopping the command")
            .contains("this process was paused or starved for longer than the lock's validity")
            .contains("Another process may hold it now");
        assertThat(b.exitCode()).as(b.toString()).isZero();
      }
    }
  }

  @Test
  @DisplayName("a command that does not exist gives 127, and the lock is released")
  void commandNotFound() {
    try (CliProcess p = redlock("exec", "nf-lock", "--", "no-such-command-xyz")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(127);
      assertThat(p.err()).contains("cannot run 'no-such-command-xyz': command not found");
    }
    try (CliProcess p = redlock("exec", "--no-wait", "nf-lock", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
    }
  }

  @Test
  @DisplayName("bad usage exits 64 with a message saying what is wrong")
  void badUsage() {
    record Case(List<String> args, String message) {}
    List<Case> cases =
        List.of(
            new Case(
                List.of("exec", "--ttl", "30", "x", "--", "true"), "duration '30' has no unit"),
            new Case(List.of("exec", "x"), "Missing required parameter: 'COMMAND'"),
            new Case(List.of("exec", "--bogus", "x", "--", "true"), "Unknown option: '--bogus'"),
            new Case(
                List.of("exec", "--no-wait", "--wait", "3s", "x", "--", "true"),
                "--wait and --no-wait exclude each other"),
            new Case(
                List.of("frobnicate"),
                "unknown command 'frobnicate'; commands: exec, extend, release, status, unlock,"
                    + " doctor, bench, help"),
            new Case(
                List.of("exec", "x", "--ttl", "5s", "--", "true"),
                "option --ttl comes after LOCKNAME"),
            new Case(List.of(), "missing command; commands: exec,"),
            new Case(
                List.of("exec", "--ttl", "2m", "--quarantine", "1m", "x", "--", "true"),
                "--ttl (2m) is longer than --quarantine (1m)"),
            new Case(
                List.of("exec", "--quarantine", "0s", "x", "--", "true"),
                "--quarantine must be positive"),
            new Case(
                List.of("exec", "x", "--fencing", "--", "true"),
                "option --fencing comes after LOCKNAME"));
    for (Case c : cases) {
      try (CliProcess p = redlock(c.args().toArray(String[]::new))) {
        assertThat(p.exitCode()).as(c.args() + "\n" + p).isEqualTo(64);
        assertThat(p.err()).as(c.args().toString()).contains(c.message());
      }
    }
  }

  @Test
  @DisplayName(
      "malformed URIs and unknown schemes exit 64, list what is available, and hide passwords")
  void badNodes() {
    try (CliProcess p = redlock("exec", "--nodes", "localhost:6379", "x", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err())
          .contains(
              "'localhost:6379' looks like host:port without a scheme; write e.g."
                  + " redis://localhost:6379",
              "[nodes from --nodes]");
    }
    try (CliProcess p = redlock("exec", "--nodes", "localhost", "x", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err()).contains("'localhost' has no scheme; expected e.g. redis://host:6379");
    }
    try (CliProcess p = redlock("exec", "--nodes", "nosuch://user:s3cret@h:1", "x", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err())
          .contains(
              "no backend for scheme 'nosuch'",
              "Schemes available: jdbc:h2, jdbc:mariadb, jdbc:postgresql, jdbc:sqlite,"
                  + " mongodb, mongodb+srv, postgres, postgresql, redis, rediss")
          .doesNotContain("s3cret");
    }
    try (CliProcess p = redlock("doctor", "--nodes", "reddis://h:1")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err()).contains("did you mean redis://?");
    }
  }

  @Test
  @DisplayName("--help documents the exit codes")
  void helpListsExitCodes() {
    try (CliProcess p = redlock("exec", "--help")) {
      assertThat(p.exitCode()).isZero();
      assertThat(p.out())
          .contains(
              "Exit codes:",
              "64",
              "bad usage",
              "69",
              "nodes unreachable",
              "75",
              "lock busy",
              "78",
              "nodes misconfigured",
              "79",
              "lock lost",
              "129/130/143",
              "SIGHUP")
          .contains("REDLOCK_TOKEN", "--no-wait", "--ttl")
          .contains("--fencing", "--quarantine=MAXTTL")
          .contains(
              "Environment of the command run by exec:",
              "REDLOCK_FENCING_TOKEN",
              "with --fencing only",
              "Environment read by redlock:",
              "REDLOCK_NODES");
    }
  }
}
