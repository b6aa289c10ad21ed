package io.redlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.redlock.testservers.FreePorts;
import io.redlock.testservers.MongoServer;
import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The jar against real servers: two Redis (one with a password) and one PostgreSQL, started by the
 * test (or taken from REDLOCK_TEST_REDIS / REDLOCK_TEST_POSTGRES), mixed in one quorum.
 */
@DisplayName("redlock against real Redis and PostgreSQL nodes")
class RealServersIT {
  private static final String REDIS_PASSWORD = "redis-it-s3cret";
  private static RedisServer redis;
  private static RedisServer redisWithPassword;
  private static PostgresServer postgres;
  private static String nodes;

  private Path dir;

  @BeforeAll
  static void startServers() {
    redis = RedisServer.start();
    redisWithPassword = RedisServer.builder().password(REDIS_PASSWORD).start();
    postgres = PostgresServer.start();
    nodes =
        String.join(
            ",",
            redis.uri(),
            redisWithPassword.uri(),
            postgres.jdbcUrl() + "&redlock.createTable=true");
  }

  @AfterAll
  static void stopServers() {
    for (AutoCloseable server : new AutoCloseable[] {redis, redisWithPassword, postgres}) {
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
    dir =
        Files.createDirectories(
            Path.of(
                    "target",
                    "it",
                    info.getTestMethod().orElseThrow().getName() + "-" + UUID.randomUUID())
                .toAbsolutePath());
  }

  private CliProcess redlock(Map<String, String> env, String... args) {
    Map<String, String> all = new HashMap<>(env);
    all.put("XDG_DATA_HOME", dir.resolve("xdg").toString());
    return CliProcess.start(dir, all, args);
  }

  private static void assertNoSecrets(String text) {
    assertThat(text).doesNotContain(REDIS_PASSWORD, PostgresServer.PASSWORD);
  }

  @Test
  @DisplayName("doctor --json parses and shows every node reachable with sane round trips")
  void doctorJson() throws IOException {
    try (CliProcess p = redlock(Map.of(), "doctor", "--json", "--ttl", "60s", "--nodes", nodes)) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertNoSecrets(p.out() + p.err());
      JsonNode report = new ObjectMapper().readTree(p.out());
      assertThat(report.at("/settings/nodes").asInt()).isEqualTo(3);
      assertThat(report.at("/settings/zeroSetup").asBoolean()).isFalse();
      assertThat(report.at("/settings/nodeTimeoutMs").asDouble()).isEqualTo(300.0);
      JsonNode list = report.get("nodes");
      assertThat(list).hasSize(3);
      assertThat(list.get(0).get("backend").asText()).isEqualTo("RedisLockNode");
      assertThat(list.get(1).get("node").asText()).contains(":***@");
      assertThat(list.get(2).get("backend").asText()).isEqualTo("JdbcLockNode");
      assertThat(list.get(2).get("node").asText())
          .startsWith("jdbc:postgresql://")
          .contains("password=***");
      for (JsonNode node : list) {
        assertThat(node.get("reachable").asBoolean()).as(node.toString()).isTrue();
        assertThat(node.get("error").isNull()).as(node.toString()).isTrue();
        assertThat(node.get("roundTrips").asInt()).isEqualTo(15);
        double median = node.get("rttMedianMs").asDouble();
        double worst = node.get("rttWorstMs").asDouble();
        assertThat(median).as(node.toString()).isPositive().isLessThanOrEqualTo(worst);
        assertThat(worst).as("a loopback round trip, even on a busy machine").isLessThan(5_000.0);
        assertThat(node.get("ttlPrecisionMs").asDouble()).isPositive();
        assertThat(node.get("anomalies")).isEmpty();
        assertThat(node.get("clockOffset").isNull()).as("never invented").isTrue();
        if (!node.get("uptimeSeconds").isNull()) {
          // only for backends that report their status
          assertThat(node.get("uptimeSeconds").asDouble()).isNotNegative();
          assertThat(node.get("durable").isBoolean()).isTrue();
        }
      }
      assertThat(report.get("verdict").asText()).isIn("OK", "WARN");
      assertThat(report.get("notAvailable").toString()).contains("clockOffset");
    }
  }

  @Test
  @DisplayName("exec runs on the mixed quorum, passes the exit code, and a second exec is busy")
  void execOnMixedQuorum() throws Exception {
    Map<String, String> env = Map.of("REDLOCK_NODES", nodes);
    try (CliProcess p = redlock(env, "exec", "mixed", "--", "sh", "-c", "exit 3")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(3);
      assertThat(p.err())
          .as("no zero-setup notice when nodes are configured")
          .doesNotContain("zero-setup");
      assertNoSecrets(p.err());
    }
    try (CliProcess holder =
        redlock(env, "exec", "mixed-busy", "--", "sh", "-c", "touch held; sleep 30")) {
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (!Files.exists(dir.resolve("held")) && System.nanoTime() - deadline < 0) {
        assertThat(holder.process.isAlive()).as(holder.toString()).isTrue();
        Thread.sleep(20);
      }
      try (CliProcess busy = redlock(env, "exec", "--no-wait", "mixed-busy", "--", "true")) {
        assertThat(busy.exitCode()).as(busy.toString()).isEqualTo(75);
        assertNoSecrets(busy.err());
      }
      holder.signal("TERM");
      assertThat(holder.exitCode()).isEqualTo(143);
    }
  }

  @Test
  @DisplayName("exec and doctor work on a quorum of three backends: Redis, PostgreSQL and MongoDB")
  void threeBackends() throws IOException {
    try (MongoServer mongo = MongoServer.start()) {
      String three =
          String.join(
              " ",
              redis.uri(),
              postgres.jdbcUrl() + "&redlock.createTable=true",
              mongo.connectionString() + "/redlock");
      try (CliProcess p =
          redlock(Map.of("REDLOCK_NODES", three), "exec", "three", "--", "sh", "-c", "exit 5")) {
        assertThat(p.exitCode()).as(mongo.description() + "\n" + p).isEqualTo(5);
      }
      try (CliProcess p =
          redlock(Map.of("REDLOCK_NODES", three), "doctor", "--json", "--ttl", "60s")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        JsonNode nodes = new ObjectMapper().readTree(p.out()).get("nodes");
        assertThat(nodes.findValuesAsText("backend"))
            .containsExactly("RedisLockNode", "JdbcLockNode", "MongoLockNode");
        assertThat(nodes.findValues("reachable")).allMatch(JsonNode::asBoolean);
      }
    }
  }

  @Test
  @DisplayName("one node down of three still locks; two down exits 69 naming the unreachable nodes")
  void unreachableNodes() {
    String dead1 = "redis://127.0.0.1:" + FreePorts.find();
    String dead2 = "redis://127.0.0.1:" + FreePorts.find();
    try (CliProcess p =
        redlock(
            Map.of(),
            "exec",
            "--no-wait",
            "--nodes",
            redis.uri() + "," + postgres.jdbcUrl() + "&redlock.createTable=true," + dead1,
            "one-down",
            "--",
            "true")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
    }
    try (CliProcess p =
        redlock(
            Map.of(),
            "exec",
            "--no-wait",
            "--nodes",
            redis.uri() + "," + dead1 + "," + dead2,
            "two-down",
            "--",
            "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(69);
      assertThat(p.err()).contains("nodes unreachable", "too few nodes reachable", dead1, dead2);
    }
    try (CliProcess p =
        redlock(Map.of(), "doctor", "--nodes", redis.uri() + "," + dead1 + "," + dead2)) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(69);
      assertThat(p.out()).contains("Verdict: FAIL", "only 1 of 3 nodes are reachable");
    }
  }
}
