package io.redlock.cli;

import static io.redlock.cli.CliProcess.awaitFile;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

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
 * The edges of the tool that issue 17 found (its "Smaller" list, signals and the command's life)
 * and issue 18's commands by token, run as processes on the zero-setup default (three SQLite files
 * in a per-test XDG_DATA_HOME).
 */
@DisplayName("redlock's edges, as a process")
class ExecEdgesIT {
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

  /** A command that writes its pid and token to files, then waits until "release" appears. */
  private static final String HOLD =
      "echo $REDLOCK_TOKEN > token.tmp; mv token.tmp token; echo $$ > pid.tmp; mv pid.tmp pid;"
          + " i=0; while [ ! -f release ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done";

  private static boolean alive(long pid) throws IOException {
    Path stat = Path.of("/proc", Long.toString(pid), "stat");
    if (!Files.exists(stat)) {
      return false;
    }
    String s;
    try {
      s = Files.readString(stat);
    } catch (IOException gone) {
      return false;
    }
    // "pid (comm) S ...": a zombie (Z) has ended, its parent just did not reap it
    String state = s.substring(s.lastIndexOf(')') + 2, s.lastIndexOf(')') + 3);
    return !state.equals("Z") && !state.equals("X");
  }

  @Test
  @DisplayName(
      "durations: 1m30s is read, negative ones 'must be positive', --ttl 0s is about --ttl, and"
          + " messages print 1ms, not PT0.001S")
  void durations() {
    try (CliProcess p =
        redlock("exec", "--ttl", "1m30s", "d", "--", "sh", "-c", "echo $REDLOCK_TTL_MS")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.out().strip()).isEqualTo("90000");
    }
    record Case(List<String> args, String message, String not) {}
    for (Case c :
        List.of(
            new Case(
                List.of("exec", "--ttl", "-5s", "d", "--", "true"),
                "--ttl must be positive, got -5s",
                "is not a duration"),
            new Case(
                List.of("exec", "--wait", "-1s", "d", "--", "true"),
                "--wait must be positive, got -1s",
                "is not a duration"),
            new Case(
                List.of("exec", "--ttl", "0s", "d", "--", "true"),
                "--ttl must be positive, got 0s",
                "--extend-every"),
            new Case(List.of("exec", "--ttl", "1ms", "d", "--", "true"), "ttl 1ms leaves", "PT0"),
            new Case(
                List.of("doctor", "--ttl", "-1m30s"),
                "--ttl must be positive, got -1m30s",
                "PT"))) {
      try (CliProcess p = redlock(c.args().toArray(String[]::new))) {
        assertThat(p.exitCode()).as(c.args() + "\n" + p).isEqualTo(64);
        assertThat(p.err()).as(c.args().toString()).contains(c.message()).doesNotContain(c.not());
      }
    }
  }

  @Test
  @DisplayName("a blank lock name is refused")
  void blankLockName() {
    for (String command : List.of("exec", "status", "extend")) {
      List<String> args =
          command.equals("exec")
              ? List.of("exec", "  ", "--", "true")
              : command.equals("extend")
                  ? List.of("extend", " ", "--token", "t", "--ttl", "1s")
                  : List.of(command, "  ");
      try (CliProcess p = redlock(args.toArray(String[]::new))) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
        assertThat(p.err()).contains("LOCKNAME must not be blank");
      }
    }
  }

  @Test
  @DisplayName("redis://127.0.0.1:notaport says that the port is bad, not that there is no host")
  void badPort() {
    try (CliProcess p =
        redlock("exec", "--nodes", "redis://127.0.0.1:notaport", "x", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err())
          .contains("has a bad port: the port is not a number from 1 to 65535")
          .doesNotContain("has no host");
    }
  }

  @Test
  @DisplayName("an unknown command lists the commands; -v is accepted before the command")
  void commandLine() {
    try (CliProcess p = redlock("lock", "x")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err())
          .contains(
              "unknown command 'lock'; commands: exec, extend, release, status, unlock, doctor,"
                  + " bench, help");
    }
    try (CliProcess p = redlock("-v", "exec", "x", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.err()).contains("acquired 'x' on 3 of 3 nodes");
    }
  }

  @Test
  @DisplayName("the zero-setup note is printed on the first run only; a README marks it")
  void zeroSetupNoteOnce() {
    for (int i = 0; i < 2; i++) {
      try (CliProcess p = redlock("exec", "z", "--", "true")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        if (i == 0) {
          assertThat(p.err()).containsOnlyOnce("no nodes configured");
        } else {
          assertThat(p.err()).as("the second run").doesNotContain("no nodes configured");
        }
      }
    }
    assertThat(dir.resolve("xdg/redlock/README")).isRegularFile();
  }

  @Test
  @DisplayName("REDLOCK_NODES set but empty exits 64; only an unset variable means zero-setup")
  void emptyNodesVariable() {
    Map<String, String> empty = new HashMap<>(env);
    empty.put("REDLOCK_NODES", "");
    try (CliProcess p = CliProcess.start(dir, empty, "exec", "e", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err())
          .contains("REDLOCK_NODES is set but empty")
          .doesNotContain("zero-setup quorum of 3");
    }
    assertThat(dir.resolve("xdg/redlock")).doesNotExist();
  }

  @Test
  @DisplayName("SIGHUP stops the command and releases the lock; exit 129, as the table says")
  void sighup() throws Exception {
    // Under nohup (or any parent that ignores SIGHUP) the tool inherits the ignored signal and the
    // JVM keeps it ignored, as nohup asks: nothing to test then.
    assumeFalse(sighupIgnored(), "SIGHUP is ignored in this environment (nohup?)");
    try (CliProcess a = redlock("exec", "--ttl", "60s", "hup", "--", "sh", "-c", HOLD)) {
      awaitFile(dir.resolve("pid"), a);
      long child = Long.parseLong(Files.readString(dir.resolve("pid")).strip());

      a.signal("HUP");

      assertThat(a.exitCode(Duration.ofSeconds(30))).as(a.toString()).isEqualTo(129);
      assertThat(a.err()).contains("interrupted: stopping the command and releasing 'hup'");
      assertThat(alive(child)).as("the command was stopped").isFalse();
    }
    try (CliProcess b = redlock("exec", "--no-wait", "hup", "--", "true")) {
      assertThat(b.exitCode()).as("released, though its TTL is 60 s: " + b).isZero();
    }
  }

  /** Whether this JVM inherited SIGHUP as ignored ({@code SigIgn} bit 0 in /proc/self/status). */
  private static boolean sighupIgnored() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("SigIgn:")) {
        return (Long.parseUnsignedLong(line.substring(7).strip(), 16) & 1L) != 0;
      }
    }
    return false;
  }

  @Test
  @DisplayName(
      "SIGQUIT to the tool (Ctrl-\\ in a terminal) puts no thread dump into the standard output it"
          + " shares with the command")
  void sigquit() throws Exception {
    try (CliProcess a =
        CliProcess.startLauncher(
            dir,
            env,
            "exec",
            "quit",
            "--",
            "sh",
            "-c",
            "trap '' QUIT; echo started; touch started; i=0;"
                + " while [ ! -f release ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done;"
                + " echo done")) {
      awaitFile(dir.resolve("started"), a);
      Thread.sleep(300); // the JVM's signal handlers are in place well before the command starts
      a.signal("QUIT");
      Thread.sleep(500);
      Files.createFile(dir.resolve("release"));
      assertThat(a.exitCode()).as(a.toString()).isZero();
      assertThat(a.out().lines().toList())
          .as("only the command's own output")
          .containsExactly("started", "done");
      assertThat(a.err()).as("the dump went to stderr").contains("Full thread dump");
    }
  }

  @Test
  @DisplayName(
      "kill -9 of redlock takes the command with it: it stops at once instead of running on"
          + " without the lock")
  void commandDiesWithRedlock() throws Exception {
    Path ticks = dir.resolve("ticks");
    try (CliProcess a =
        redlock(
            "exec",
            "--ttl",
            "60s",
            "orphan",
            "--",
            "sh",
            "-c",
            "echo $$ > pid.tmp; mv pid.tmp pid; i=0;"
                + " while [ $i -lt 600 ]; do echo tick >> ticks; sleep 0.1; i=$((i+1)); done")) {
      awaitFile(dir.resolve("pid"), a);
      long child = Long.parseLong(Files.readString(dir.resolve("pid")).strip());
      awaitFile(ticks, a); // written with >>: may be empty for a moment, but it exists

      a.signal("KILL");
      a.exitCode(Duration.ofSeconds(10));

      long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
      while (alive(child) && System.nanoTime() - deadline < 0) {
        Thread.sleep(20);
      }
      assertThat(alive(child)).as("the command died with redlock").isFalse();
      long before = Files.size(ticks);
      Thread.sleep(500);
      assertThat(Files.size(ticks)).as("and prints no more").isEqualTo(before);
    }
  }

  @Test
  @DisplayName(
      "kill -9 of redlock takes the command's children too (a shell's command, a pipeline, one in"
          + " a session of its own), not only the command: none runs on without the lock")
  void grandchildrenDieWithRedlock() throws Exception {
    record Case(String lock, List<String> command, List<String> targets) {}
    List<Case> cases = new ArrayList<>();
    cases.add(new Case("k1", List.of("sh", "-c", "sleep 77; echo done"), List.of("sleep 77")));
    if (onPath("bash")) {
      cases.add(
          new Case("k2", List.of("bash", "-c", "sleep 78 | cat"), List.of("sleep 78", "cat")));
    }
    if (onPath("setsid")) {
      cases.add(new Case("k3", List.of("sh", "-c", "setsid sleep 79 & wait"), List.of("sleep 79")));
    }
    for (Case c : cases) {
      List<String> args = new ArrayList<>(List.of("exec", "--ttl", "3s", c.lock(), "--"));
      args.addAll(c.command());
      List<ProcessHandle> found = new ArrayList<>();
      try (CliProcess a = redlock(args.toArray(String[]::new))) {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        for (String target : c.targets()) {
          ProcessHandle h;
          while ((h = descendant(a.process, target)) == null) {
            if (System.nanoTime() - deadline > 0 || !a.process.isAlive()) {
              throw new AssertionError("no '" + target + "' under " + a);
            }
            Thread.sleep(20);
          }
          found.add(h);
        }

        a.signal("KILL");
        a.exitCode(Duration.ofSeconds(30));

        for (ProcessHandle h : found) {
          long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
          while (alive(h.pid()) && System.nanoTime() - until < 0) {
            Thread.sleep(50);
          }
          assertThat(alive(h.pid()))
              .as("%s of %s still runs after redlock was killed\n%s", h.info(), c.command(), a)
              .isFalse();
        }
      } finally {
        found.forEach(ProcessHandle::destroyForcibly);
      }
    }
  }

  /** A descendant of {@code root} running {@code target}, e.g. "sleep 77" or "cat"; or null. */
  private static ProcessHandle descendant(Process root, String target) {
    String[] words = target.split(" ");
    return root.descendants()
        .filter(
            h -> {
              String command = h.info().command().orElse("");
              String[] arguments = h.info().arguments().orElse(new String[0]);
              return (command.equals(words[0]) || command.endsWith("/" + words[0]))
                  && List.of(arguments).equals(List.of(words).subList(1, words.length));
            })
        .findFirst()
        .orElse(null);
  }

  private static boolean onPath(String program) {
    for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
      if (!d.isEmpty() && Files.isExecutable(Path.of(d, program))) {
        return true;
      }
    }
    return false;
  }

  @Test
  @DisplayName(
      "extend and release by token act on another process's lease; a wrong token exits 79; the"
          + " holder then learns its token is gone and says so")
  void extendAndReleaseByToken() throws Exception {
    try (CliProcess a = redlock("exec", "--ttl", "3s", "tok", "--", "sh", "-c", HOLD)) {
      awaitFile(dir.resolve("token"), a);
      String token = Files.readString(dir.resolve("token")).strip();

      try (CliProcess p = redlock("extend", "tok", "--token", token, "--ttl", "1m")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        assertThat(p.err()).contains("extended 'tok' to 1m on 3 of 3 nodes");
      }
      try (CliProcess p = redlock("extend", "tok", "--token", "not-the-token", "--ttl", "1m")) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(79);
        assertThat(p.err()).contains("not held: 'tok' is not held with this token");
      }
      Map<String, String> inside = new HashMap<>(env);
      inside.put("REDLOCK_TOKEN", token); // as the command itself would call it
      try (CliProcess p = CliProcess.start(dir, inside, "release", "tok")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        assertThat(p.err()).contains("released 'tok': deleted on 3 of 3 nodes");
      }
      try (CliProcess p = redlock("exec", "--no-wait", "tok", "--", "true")) {
        assertThat(p.exitCode()).as("free after the release: " + p).isZero();
      }
      assertThat(a.exitCode(Duration.ofSeconds(30))).as(a.toString()).isEqualTo(79);
      assertThat(a.err())
          .contains("LOCK LOST: 'tok': ", "the nodes no longer hold its token")
          .doesNotContain("paused");
    }
  }

  @Test
  @DisplayName(
      "status shows each node's holder (token prefix only) and time left; unlock needs --force and"
          + " says what it deleted")
  void statusAndUnlock() throws Exception {
    try (CliProcess a = redlock("exec", "--ttl", "5s", "st", "--", "sh", "-c", HOLD)) {
      awaitFile(dir.resolve("token"), a);
      String token = Files.readString(dir.resolve("token")).strip();

      try (CliProcess p = redlock("status", "st")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        assertThat(p.out())
            .contains("NODE", "HOLDER", "EXPIRES IN", token.substring(0, 8) + "…")
            .contains("'st' is HELD by " + token.substring(0, 8) + "… on 3 of 3 nodes")
            .doesNotContain(token);
        assertThat(p.out().lines().filter(l -> l.contains("node-") && l.contains(" s"))).hasSize(3);
      }
      try (CliProcess p = redlock("unlock", "st")) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
        assertThat(p.err()).contains("add --force");
      }
      try (CliProcess p = redlock("unlock", "--force", "st")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        assertThat(p.out().lines().filter(l -> l.startsWith("deleted 'st' on jdbc:sqlite:")))
            .hasSize(3)
            .allMatch(l -> l.contains("(token " + token.substring(0, 8) + "…"));
        assertThat(p.out()).contains("deleted 'st' on 3 of 3 nodes").doesNotContain(token);
      }
      try (CliProcess p = redlock("status", "st")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        assertThat(p.out()).contains("'st' is FREE");
      }
      assertThat(a.exitCode(Duration.ofSeconds(30))).as(a.toString()).isEqualTo(79);
      // Found at an extension: "deleted by another client" while validity was left (it was),
      // "expired on them, or someone deleted it" had this machine been starved past it.
      assertThat(a.err()).contains("LOCK LOST: 'st': ").containsPattern("deleted (by|it)");
    }
  }

  @Test
  @DisplayName(
      "a lock deleted while the command ran (unlock --force) is LOCK LOST, exit 79, though the"
          + " command exited 0 before any extension: the release finds the token gone")
  void deletedWhileCommandRan() throws Exception {
    // 60 s: the first extension comes 20 s after the start, long after the test is done with it.
    try (CliProcess a = redlock("exec", "--ttl", "60s", "zs5", "--", "sh", "-c", HOLD)) {
      awaitFile(dir.resolve("token"), a);

      try (CliProcess p = redlock("unlock", "--force", "zs5")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        assertThat(p.out()).contains("deleted 'zs5' on 3 of 3 nodes");
      }
      try (CliProcess b = redlock("exec", "--no-wait", "zs5", "--", "true")) {
        assertThat(b.exitCode())
            .as("a second exec ran while the first one's command ran: " + b)
            .isZero();
      }
      Files.createFile(dir.resolve("release")); // the command ends, with 0

      assertThat(a.exitCode(Duration.ofSeconds(60))).as(a.toString()).isEqualTo(79);
      assertThat(a.err())
          .contains(
              "LOCK LOST: 'zs5': the lock was deleted by another client (redlock unlock --force?")
          .doesNotContain("paused");
    }
  }
}
