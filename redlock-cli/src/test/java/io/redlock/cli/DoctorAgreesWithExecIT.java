package io.redlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * {@code doctor} and {@code exec} give one answer about nodes that fail in a way no retry fixes: a
 * wrong password, a missing table, an unknown host, a refused TLS handshake. Real servers, the real
 * jar as a process; the engine classifies, for both.
 */
@DisplayName("redlock doctor agrees with exec on misconfigured nodes")
class DoctorAgreesWithExecIT {
  private static final String SECRET = "doctor-agrees-s3cret";

  private static RedisServers redis;
  private static RedisServer redisWithPassword;
  private static PostgresServer pg;

  private Path dir;

  @BeforeAll
  static void startServers() {
    redis = RedisServers.start(2);
    redisWithPassword = RedisServer.builder().password(SECRET).start();
    pg = PostgresServer.startLocal();
  }

  @AfterAll
  static void stopServers() {
    for (AutoCloseable server : new AutoCloseable[] {redis, redisWithPassword, pg}) {
      try {
        if (server != null) {
          server.close();
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

  private CliProcess redlock(String... args) {
    Map<String, String> env = new HashMap<>();
    env.put("XDG_DATA_HOME", dir.resolve("xdg").toString());
    return CliProcess.start(dir, env, args);
  }

  /** Two healthy Redis and {@code bad}: a quorum of 2 is there without it. */
  private static String withTwoGood(String bad) {
    return String.join(",", redis.get(0).uri(), redis.get(1).uri(), bad);
  }

  /**
   * Exec refuses the nodes with 78; doctor, on the same nodes, exits with 78 too and names the node
   * with exec's words for its cause, not as merely "unreachable" with "locks still work".
   */
  private void assertSameAnswer(String nodes, String cause) {
    String execLine;
    try (CliProcess exec = redlock("exec", "--nodes", nodes, "agree", "--", "true")) {
      assertThat(exec.exitCode()).as(exec.toString()).isEqualTo(78);
      List<String> lines = exec.err().lines().filter(l -> l.startsWith("redlock:   ")).toList();
      assertThat(lines).as(exec.toString()).hasSize(1);
      execLine =
          lines.get(0).substring("redlock:   ".length()).replace(" [nodes from --nodes]", "");
      assertThat(execLine).contains(cause);
    }
    try (CliProcess doctor = redlock("doctor", "--nodes", nodes)) {
      assertThat(doctor.exitCode()).as(doctor.toString()).isEqualTo(78);
      assertThat(doctor.out())
          .as(doctor.toString())
          .contains("Verdict: FAIL", "nodes misconfigured", "no retry fixes", execLine)
          .doesNotContain("Locks still work", "strictNodes")
          .doesNotContain(SECRET);
      assertThat(doctor.err()).as(doctor.toString()).doesNotContain("[WARN]");
    }
  }

  @Test
  @DisplayName("a wrong Redis password: 78 from both, the same cause")
  void wrongPassword() {
    assertSameAnswer(
        withTwoGood("redis://:wrong-pw@127.0.0.1:" + redisWithPassword.port()),
        "authentication failed");
  }

  @Test
  @DisplayName("a PostgreSQL without the lock table: 78 from both, the same cause")
  void missingTable() {
    assertSameAnswer(withTwoGood(pg.jdbcUrl()), "table redlock_locks does not exist");
  }

  @Test
  @DisplayName("an unknown host: 78 from both, the same cause")
  void unknownHost() {
    assertSameAnswer(withTwoGood("redis://no-such-host.invalid:6379"), "unknown host");
  }

  @Test
  @DisplayName("TLS asked of a PostgreSQL without it: 78 from both, the same cause")
  void tlsRefused() {
    String tls =
        pg.uri().replace("sslmode=disable", "sslmode=verify-full") + "&redlock.createTable=true";
    assertSameAnswer(withTwoGood(tls), "TLS");
  }

  @Test
  @DisplayName("--no-strict: exec outvotes the node and runs; doctor warns, naming it, and exits 0")
  void noStrict() {
    String nodes = withTwoGood("redis://no-such-host.invalid:6379");
    try (CliProcess exec =
        redlock("exec", "--no-strict", "--nodes", nodes, "agree", "--", "true")) {
      assertThat(exec.exitCode()).as(exec.toString()).isZero();
    }
    try (CliProcess doctor = redlock("doctor", "--no-strict", "--nodes", nodes)) {
      assertThat(doctor.exitCode()).as(doctor.toString()).isZero();
      assertThat(doctor.out())
          .as(doctor.toString())
          .contains("Verdict: WARN", "unknown host", "exec --no-strict outvotes it")
          .doesNotContain("Locks still work");
    }
  }

  @Test
  @DisplayName("one Redis listed twice (/0 and /1): exec refuses it with 78, and so does doctor")
  void sameServerTwice() {
    int port = redis.get(0).port();
    String nodes =
        String.join(
            ",",
            "redis://127.0.0.1:" + port + "/0",
            "redis://127.0.0.1:" + port + "/1",
            redis.get(1).uri());
    try (CliProcess exec = redlock("exec", "--nodes", nodes, "twice", "--", "true")) {
      assertThat(exec.exitCode()).as(exec.toString()).isEqualTo(78);
      assertThat(exec.err()).contains("one server listed twice");
    }
    try (CliProcess doctor = redlock("doctor", "--nodes", nodes)) {
      assertThat(doctor.exitCode()).as(doctor.toString()).isEqualTo(78);
      assertThat(doctor.out()).contains("Verdict: FAIL", "one server listed twice");
    }
  }
}
