package io.redlock.cli;

import static io.redlock.cli.CliProcess.awaitFile;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * How exec reads its command line (no LOCKNAME before "--", flock's -c, node options before the
 * subcommand) and the exit codes a script can choose (-E, --lost-exit-code), as a process on the
 * zero-setup default.
 */
@DisplayName("redlock exec's arguments and exit codes, as a process")
class ExecArgumentsIT {
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

  private static final String HOLD =
      "touch held; i=0; while [ ! -f release ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done";

  @Test
  @DisplayName("3: 'exec -- echo ran' has no LOCKNAME: refused (64), nothing runs")
  void noLockNameBeforeDashDash() {
    try (CliProcess p = redlock("exec", "--", "sh", "-c", "touch ran")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err()).contains("no LOCKNAME before '--'");
    }
    try (CliProcess p = redlock("exec", "--ttl", "5s", "--", "touch", "ran")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
    }
    assertThat(dir.resolve("ran")).doesNotExist();
    // the usual form still works, "--" in the command's own arguments too
    try (CliProcess p = redlock("exec", "lk", "--", "sh", "-c", "touch \"$1\"", "--", "ran")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
    }
    assertThat(dir.resolve("ran")).exists();
  }

  @Test
  @DisplayName("3: -c 'CMD' runs sh -c CMD, after LOCKNAME as flock has it, or before it")
  void dashC() throws IOException {
    try (CliProcess p = redlock("exec", "lk", "-c", "echo one > out1; exit 3")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(3);
    }
    assertThat(Files.readString(dir.resolve("out1"))).isEqualTo("one\n");
    try (CliProcess p = redlock("exec", "-c", "echo two > out2", "lk")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
    }
    assertThat(Files.readString(dir.resolve("out2"))).isEqualTo("two\n");
    try (CliProcess p = redlock("exec", "lk", "-c", "echo", "three")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err()).contains("-c takes one argument");
    }
  }

  @Test
  @DisplayName("3: node options before the subcommand are accepted, as after it")
  void globalNodeOptions() {
    String node = "jdbc:sqlite:" + dir.resolve("one.db") + "?redlock.createTable=true";
    try (CliProcess p =
        redlock("--nodes", node, "--node-timeout", "500ms", "exec", "g", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.err()).doesNotContain("zero-setup");
    }
    assertThat(dir.resolve("one.db")).exists();
    try (CliProcess p = redlock("--nodes", node, "status", "g")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.out()).contains("one.db").contains("'g' is FREE");
    }
  }

  @Test
  @DisplayName(
      "3: -E/--conflict-exit-code and --lost-exit-code tell the lock's 75 and 79 from the"
          + " command's own")
  void exitCodes() throws Exception {
    try (CliProcess holder = redlock("exec", "--ttl", "3s", "busy", "--", "sh", "-c", HOLD)) {
      awaitFile(dir.resolve("held"), holder);
      try (CliProcess p = redlock("exec", "--no-wait", "-E", "3", "busy", "--", "true")) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(3);
        assertThat(p.err()).contains("lock busy");
      }
      try (CliProcess p =
          redlock("exec", "--conflict-exit-code", "4", "--wait", "0s", "busy", "--", "true")) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(4);
      }
      // a real loss: the lock deleted under the holder, noticed at its next extension (1 s)
      try (CliProcess p = redlock("unlock", "--force", "busy")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
      }
      Files.createFile(dir.resolve("release"));
      assertThat(holder.exitCode()).as(holder.toString()).isEqualTo(79);
    }
    Files.delete(dir.resolve("release"));
    Files.delete(dir.resolve("held"));
    try (CliProcess holder =
        redlock("exec", "--lost-exit-code", "90", "--ttl", "3s", "lost", "--", "sh", "-c", HOLD)) {
      awaitFile(dir.resolve("held"), holder);
      try (CliProcess p = redlock("unlock", "--force", "lost")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
      }
      Files.createFile(dir.resolve("release"));
      assertThat(holder.exitCode()).as(holder.toString()).isEqualTo(90);
      assertThat(holder.err()).contains("LOCK LOST");
    }
    // the command's own 79 and 75 pass through unchanged
    try (CliProcess p =
        redlock("exec", "--lost-exit-code", "90", "-E", "3", "own", "--", "sh", "-c", "exit 79")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(79);
      assertThat(p.err()).doesNotContain("LOCK LOST");
    }
    try (CliProcess p = redlock("exec", "-E", "300", "x", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
    }
  }
}
