package io.redlock.cli;

import static io.redlock.cli.CliProcess.awaitFile;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * redlock extend, release and status run by the command of redlock exec, on real Redis servers
 * whose password exec keeps out of the command's environment; and exec's start and end when nodes
 * are stopped (SIGSTOP).
 */
@DisplayName("redlock commands inside exec, and exec with stopped nodes, on real Redis")
class NestedCommandsIT {
  private static final String SECRET = "nested-s3cret";

  private static RedisServers secured;
  private static RedisServers open;

  private Path dir;

  @BeforeAll
  static void startServers() {
    secured = RedisServers.start(3, RedisServer.builder().password(SECRET));
    open = RedisServers.start(5);
  }

  @AfterAll
  static void stopServers() {
    for (AutoCloseable s : new AutoCloseable[] {secured, open}) {
      try {
        if (s != null) {
          s.close();
        }
      } catch (Exception e) {
        // keep stopping the others
      }
    }
  }

  @BeforeEach
  void setUp(TestInfo info) throws IOException {
    dir = CliProcess.testDir(info);
  }

  /** The secured servers, with the password as a ${RL_NESTED_PW} reference. */
  private static String securedNodes() {
    return secured.list().stream()
        .map(s -> "redis://:${RL_NESTED_PW}@127.0.0.1:" + s.port())
        .collect(Collectors.joining(","));
  }

  private Map<String, String> env() {
    Map<String, String> env = new HashMap<>();
    env.put("XDG_DATA_HOME", dir.resolve("xdg").toString());
    env.put("REDLOCK_NODES", securedNodes());
    env.put("RL_NESTED_PW", SECRET);
    // how the command runs the tool: the same Java and jar as the test's
    env.put("RL_JAVA", Path.of(System.getProperty("java.home"), "bin", "java").toString());
    env.put("RL_JAR", CliProcess.jar().toAbsolutePath().toString());
    return env;
  }

  /** Runs the tool from inside the command, stderr to NAME.err, exit code to NAME.rc. */
  private static String nested(String name, String args) {
    return "\"$RL_JAVA\" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -jar \"$RL_JAR\" "
        + args
        + " >"
        + name
        + ".out 2>"
        + name
        + ".err; echo $? >"
        + name
        + ".rc; ";
  }

  private static final String WAIT_GO =
      "i=0; while [ ! -f go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done";

  private String read(String name) throws IOException {
    return Files.readString(dir.resolve(name));
  }

  /** "for at most another 1m55s" in status's verdict, in seconds. */
  private static long heldFor(String statusOut) {
    Matcher m =
        Pattern.compile("for at most another (?:(\\d+)m)?(?:([\\d.]+) ?s)?").matcher(statusOut);
    assertThat(m.find()).as(statusOut).isTrue();
    long minutes = m.group(1) == null ? 0 : Long.parseLong(m.group(1));
    double seconds = m.group(2) == null ? 0 : Double.parseDouble(m.group(2));
    return minutes * 60 + (long) seconds;
  }

  @Test
  @DisplayName(
      "1: extend and status inside exec reach exec's nodes though their password was kept out of"
          + " the command's environment, and exec's renewal keeps the TTL the command asked for")
  void nestedExtendAndStatus() throws Exception {
    String script =
        nested("extend", "extend job --ttl 2m")
            + nested("status", "status job")
            + "env > childenv; touch extended; "
            + WAIT_GO;
    try (CliProcess p =
        CliProcess.start(dir, env(), "exec", "--ttl", "6s", "job", "--", "sh", "-c", script)) {
      awaitFile(dir.resolve("extended"), p);
      assertThat(read("childenv")).doesNotContain(SECRET).doesNotContain("RL_NESTED_PW=");
      assertThat(read("extend.rc").strip()).as(read("extend.err")).isEqualTo("0");
      assertThat(read("extend.err")).contains("extended 'job' to 2m on 3 of 3 nodes");
      assertThat(read("status.rc").strip()).as(read("status.err")).isEqualTo("0");
      assertThat(read("status.out")).contains("'job' is HELD");
      assertThat(read("status.out") + read("status.err") + read("extend.err"))
          .doesNotContain(SECRET);
      // exec renews every 2 s (a third of its 6 s TTL): after a few renewals, the TTL is still 2m
      Thread.sleep(5_000);
      try (CliProcess status = CliProcess.start(dir, env(), "status", "job")) {
        assertThat(status.exitCode()).as(status.toString()).isZero();
        assertThat(heldFor(status.out()))
            .as("exec's renewal keeps the nested extend's 2m: " + status.out())
            .isGreaterThan(60);
      }
      Files.createFile(dir.resolve("go"));
      assertThat(p.exitCode()).as(p.toString()).isZero();
    }
  }

  @Test
  @DisplayName(
      "1: without passwords too, exec's renewal keeps the TTL a nested extend asked for, rather"
          + " than put its own back at its next extension")
  void renewalKeepsNestedTtl() throws Exception {
    Map<String, String> env = env();
    env.put("REDLOCK_NODES", String.join(",", open.uris().subList(0, 3)));
    String script = nested("extend", "extend job --ttl 2m") + "touch extended; " + WAIT_GO;
    try (CliProcess p =
        CliProcess.start(dir, env, "exec", "--ttl", "6s", "job", "--", "sh", "-c", script)) {
      awaitFile(dir.resolve("extended"), p);
      assertThat(read("extend.rc").strip()).as(read("extend.err")).isEqualTo("0");
      Thread.sleep(5_000); // two renewals or more, every 2 s
      try (CliProcess status = CliProcess.start(dir, env, "status", "job")) {
        assertThat(status.exitCode()).as(status.toString()).isZero();
        assertThat(heldFor(status.out())).as(status.out()).isGreaterThan(60);
      }
      Files.createFile(dir.resolve("go"));
      assertThat(p.exitCode()).as(p.toString()).isZero();
    }
  }

  @Test
  @DisplayName(
      "1: release inside exec releases exec's lease through exec: exit 0, exec then passes the"
          + " command's code on and the lock is free")
  void nestedRelease() throws Exception {
    String script = nested("release", "release job") + "touch released; " + WAIT_GO;
    try (CliProcess p =
        CliProcess.start(dir, env(), "exec", "--ttl", "6s", "job", "--", "sh", "-c", script)) {
      awaitFile(dir.resolve("released"), p);
      assertThat(read("release.rc").strip()).as(read("release.err")).isEqualTo("0");
      try (CliProcess status = CliProcess.start(dir, env(), "status", "job")) {
        assertThat(status.exitCode()).as(status.toString()).isZero();
        assertThat(status.out()).contains("'job' is FREE");
      }
      Files.createFile(dir.resolve("go"));
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.err()).doesNotContain("LOCK LOST");
    }
  }

  @Test
  @DisplayName(
      "1: a nested command whose exec cannot be reached refuses (69) instead of using the"
          + " zero-setup SQLite files")
  void unreachableParentRefuses() throws Exception {
    Map<String, String> env = new HashMap<>();
    env.put("XDG_DATA_HOME", dir.resolve("xdg").toString());
    env.put("REDLOCK_EXEC_SOCKET", dir.resolve("no-such-socket").toString());
    env.put("REDLOCK_TOKEN", "sometoken");
    env.put("REDLOCK_LOCK_NAME", "job");
    for (String[] args :
        List.of(
            new String[] {"status", "job"},
            new String[] {"extend", "job", "--ttl", "1m"},
            new String[] {"release", "other"})) {
      try (CliProcess p = CliProcess.start(dir, env, args)) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(69);
        assertThat(p.err()).contains("refusing to use other nodes than its own");
        assertThat(p.out()).doesNotContain("FREE");
      }
    }
  }

  @Test
  @DisplayName(
      "2: --no-wait with 3 of 5 nodes stopped makes one attempt (the stopped nodes never"
          + " answered) and says so")
  void noWaitWithStoppedNodes() throws Exception {
    Map<String, String> env = new HashMap<>();
    env.put("XDG_DATA_HOME", dir.resolve("xdg").toString());
    env.put("REDLOCK_NODES", String.join(",", open.uris()));
    open.get(2).pause();
    open.get(3).pause();
    open.get(4).pause();
    try (CliProcess p = CliProcess.start(dir, env, "-v", "exec", "--no-wait", "nw", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(69);
      String last =
          p.err()
              .lines()
              .filter(l -> l.startsWith("redlock: nodes unreachable"))
              .findFirst()
              .orElseThrow(() -> new AssertionError(p.toString()));
      assertThat(last).contains("(1 attempt)");
      assertThat(p.err()).doesNotContain("trying again");
    } finally {
      open.get(2).resume();
      open.get(3).resume();
      open.get(4).resume();
    }
  }
}
