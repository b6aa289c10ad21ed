package io.redlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.redlock.testservers.FreePorts;
import io.redlock.testservers.MongoServer;
import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
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
    dir = CliProcess.testDir(info);
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
      assertThat(report.at("/settings/nodeTimeoutMs").asDouble())
          .as("the library's default for a 60 s TTL")
          .isEqualTo(
              (double)
                  io.redlock.RedlockSettings.defaults()
                      .nodeTimeoutFor(java.time.Duration.ofSeconds(60))
                      .toMillis());
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
        // Servers on this machine: the store's clock is this machine's, within a round trip.
        assertThat(node.get("readsClock").asBoolean()).as(node.toString()).isTrue();
        assertThat(node.get("clockOffsetMs").isNumber()).as(node.toString()).isTrue();
        double uncertainty = node.get("clockOffsetUncertaintyMs").asDouble();
        assertThat(uncertainty).as(node.toString()).isNotNegative().isLessThan(2_500.0);
        assertThat(Math.abs(node.get("clockOffsetMs").asDouble()))
            .as(node.toString())
            .isLessThan(uncertainty + 1_000.0);
        assertThat(node.get("clockError").isNull()).as(node.toString()).isTrue();
        assertThat(node.get("clockNote").isNull()).as("a server, not this process").isTrue();
        // Redis and PostgreSQL report their status: real values, never n/a.
        assertThat(node.get("reportsStatus").asBoolean()).as(node.toString()).isTrue();
        assertThat(node.get("statusError").isNull()).as(node.toString()).isTrue();
        assertThat(node.get("uptimeSeconds").isNumber()).as(node.toString()).isTrue();
        assertThat(node.get("uptimeSeconds").asDouble()).isNotNegative();
        assertThat(node.get("durable").isBoolean()).as(node.toString()).isTrue();
        assertThat(node.get("incarnation").asText()).as(node.toString()).isNotBlank();
        assertThat(node.get("fencing").asBoolean()).isTrue();
      }
      for (int i = 0; i < 2; i++) {
        Map<String, String> info = info(i == 0 ? redis : redisWithPassword);
        JsonNode node = list.get(i);
        assertThat(node.get("serverVersion").asText()).isEqualTo(info.get("redis_version"));
        assertThat(node.get("incarnation").asText()).isEqualTo(info.get("run_id"));
        // Started without persistence by the test: not durable, so quarantine would apply.
        assertThat(node.get("durable").asBoolean()).isFalse();
        assertThat(node.get("quarantine").asText()).isEqualTo("off");
        assertThat(node.get("uptimeSeconds").asDouble())
            .isLessThanOrEqualTo(Double.parseDouble(info.get("uptime_in_seconds")) + 1);
      }
      assertThat(list.get(2).get("serverVersion").asText()).isEqualTo(postgresVersion());
      assertThat(report.get("findings").toString())
          .contains("not durable", "--quarantine MAXTTL", "restartQuarantine(maxTtl)");
      assertThat(report.get("verdict").asText()).isIn("OK", "WARN");
      assertThat(report.get("notAvailable")).as("every node reads status and clock").isEmpty();
      assertThat(report.get("findings").toString()).contains("store clocks are within 1.00 s");
    }
  }

  @Test
  @DisplayName(
      "doctor shows the clock offset of a Redis server whose clock libfaketime moved 30 s ahead,"
          + " and warns about it naming the node and the fix")
  void doctorSeesClockOffset() throws IOException {
    Assumptions.assumeTrue(
        RedisServer.canMoveClock(),
        "needs libfaketime (apt-get install -y libfaketime) to move a server's clock");
    try (RedisServer ahead = RedisServer.builder().clockOffset(Duration.ofSeconds(30)).start()) {
      String three = String.join(",", redis.uri(), ahead.uri(), redisWithPassword.uri());
      try (CliProcess p = redlock(Map.of(), "doctor", "--json", "--ttl", "60s", "--nodes", three)) {
        assertThat(p.exitCode()).as("a clock warning does not fail the doctor: " + p).isZero();
        JsonNode report = new ObjectMapper().readTree(p.out());
        JsonNode moved = report.get("nodes").get(1);
        assertThat(moved.get("node").asText()).startsWith(ahead.uri());
        double offset = moved.get("clockOffsetMs").asDouble();
        assertThat(offset).as(moved.toString()).isBetween(27_000.0, 33_000.0);
        assertThat(Math.abs(report.get("nodes").get(0).get("clockOffsetMs").asDouble()))
            .as("the Redis on this machine's clock")
            .isLessThan(1_000.0);
        assertThat(report.get("verdict").asText()).isEqualTo("WARN");
        JsonNode clock = null;
        for (JsonNode f : report.get("findings")) {
          if (f.get("topic").asText().equals("CLOCK")) {
            clock = f;
          }
        }
        assertThat(clock).as(report.get("findings").toString()).isNotNull();
        assertThat(clock.get("level").asText()).isEqualTo("WARN");
        assertThat(clock.get("message").asText())
            .contains(ahead.uri(), "ahead", "Enable NTP", "slew")
            .doesNotContain(redis.uri() + " (");
      }
      try (CliProcess p = redlock(Map.of(), "doctor", "--ttl", "60s", "--nodes", three)) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        String row =
            p.out()
                .lines()
                .filter(l -> l.startsWith(ahead.uri()) && l.contains(" ±"))
                .findFirst()
                .orElseThrow(() -> new AssertionError(p.toString()));
        assertThat(row).matches(".*  \\+(29|30|31)\\.\\d\\d s ±.*");
        assertThat(p.out()).contains("CLOCK OFFSET", "warn  store clock not synchronised");
      }
    }
  }

  /** INFO server of a Redis, as a map. */
  private static Map<String, String> info(RedisServer server) {
    Map<String, String> out = new HashMap<>();
    for (String line : server.command("INFO", "server").split("\r?\n")) {
      int colon = line.indexOf(':');
      if (colon > 0 && !line.startsWith("#")) {
        out.put(line.substring(0, colon), line.substring(colon + 1).strip());
      }
    }
    return out;
  }

  private static String postgresVersion() {
    try (Connection c = DriverManager.getConnection(postgres.jdbcUrl());
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SHOW server_version")) {
      assertThat(rs.next()).isTrue();
      return rs.getString(1);
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  @DisplayName(
      "exec --fencing on real Redis nodes exports strictly increasing tokens to successive"
          + " commands")
  void fencingOnRedis() {
    try (RedisServers three = RedisServers.start(3)) {
      Map<String, String> env = Map.of("REDLOCK_NODES", String.join(",", three.uris()));
      List<Long> tokens = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        try (CliProcess p =
            redlock(
                env,
                "exec",
                "--fencing",
                "fenced-redis",
                "--",
                "sh",
                "-c",
                "echo $REDLOCK_FENCING_TOKEN")) {
          tokens.add(ExecIT.fencingToken(p));
        }
      }
      assertThat(tokens).doesNotHaveDuplicates().isSorted();
    }
  }

  @Test
  @DisplayName(
      "--quarantine keeps freshly started Redis nodes without persistence from voting until they"
          + " have been up for the maximum TTL; without it they lock at once")
  void quarantineOnVolatileRedis() throws IOException {
    try (RedisServers fresh = RedisServers.start(3, RedisServer.builder().faultInjection())) {
      Map<String, String> env = Map.of("REDLOCK_NODES", String.join(",", fresh.uris()));
      // Up for seconds, not 5 minutes: none of them may vote (they could have forgotten locks).
      try (CliProcess p =
          redlock(
              env, "exec", "--no-wait", "--quarantine", "5m", "--ttl", "30s", "q", "--", "true")) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(69);
        assertThat(p.err())
            .contains(
                "too few nodes may vote (restart quarantine)",
                "restart quarantine leaves out",
                fresh.get(0).uri());
      }
      try (CliProcess p = redlock(env, "exec", "--no-wait", "q", "--", "true")) {
        assertThat(p.exitCode()).as("without quarantine: " + p).isZero();
      }
      try (CliProcess p = redlock(env, "doctor", "--json", "--ttl", "30s", "--quarantine", "5m")) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(69);
        JsonNode report = new ObjectMapper().readTree(p.out());
        assertThat(report.get("verdict").asText()).isEqualTo("FAIL");
        assertThat(report.get("findings").toString())
            .contains("restart quarantine: only 0 of 3 nodes may vote now");
        double votesAfter = report.at("/settings/quarantineWaitMs").asDouble();
        assertThat(votesAfter).isEqualTo(303_002.0);
        for (JsonNode node : report.get("nodes")) {
          assertThat(node.get("durable").asBoolean()).isFalse();
          assertThat(node.get("quarantine").asText()).isEqualTo("active");
          assertThat(node.get("quarantineLeftMs").asDouble())
              .isPositive()
              .isLessThanOrEqualTo(votesAfter);
        }
      }
      // With a maximum TTL of 2 s the nodes come out of quarantine while redlock waits.
      try (CliProcess p =
          redlock(
              env,
              "exec",
              "--wait",
              "60s",
              "--quarantine",
              "2s",
              "--ttl",
              "2s",
              "--node-timeout",
              "200ms",
              "q",
              "--",
              "sh",
              "-c",
              "echo ran")) {
        assertThat(p.exitCode(Duration.ofSeconds(90))).as(p.toString()).isZero();
        assertThat(p.out().strip()).isEqualTo("ran");
      }
    }
  }

  @Test
  @DisplayName(
      "--quarantine counts durable (appendfsync always) Redis nodes at once and names the"
          + " quarantined one")
  void quarantineWithDurableMajority() throws IOException {
    try (RedisServer durable1 = RedisServer.builder().appendOnly().start();
        RedisServer durable2 = RedisServer.builder().appendOnly().start();
        RedisServer volatile1 = RedisServer.builder().faultInjection().start()) {
      Map<String, String> env =
          Map.of(
              "REDLOCK_NODES", String.join(",", durable1.uri(), durable2.uri(), volatile1.uri()));
      try (CliProcess p =
          // --wait: fsync on every write may make a durable node miss one attempt's deadline.
          redlock(env, "exec", "--wait", "60s", "--quarantine", "5m", "dq", "--", "true")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        String note =
            p.err()
                .lines()
                .filter(l -> l.startsWith("redlock: note: restart quarantine"))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no quarantine note from " + p));
        String prefix = "redlock: note: restart quarantine: the votes of ";
        assertThat(note).startsWith(prefix).contains(" did not count (");
        String left = note.substring(prefix.length(), note.indexOf(" did not count ("));
        assertThat(left)
            .as("only the node without persistence is left out")
            .startsWith(volatile1.uri())
            .doesNotContain(",");
      }
      // A 5m TTL gives a 1 s node timeout: room for fsync on a loaded machine.
      try (CliProcess p = redlock(env, "doctor", "--json", "--ttl", "5m", "--quarantine", "5m")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        JsonNode report = new ObjectMapper().readTree(p.out());
        JsonNode nodes = report.get("nodes");
        assertThat(nodes.findValuesAsText("quarantine"))
            .containsExactly("not-needed", "not-needed", "active");
        assertThat(nodes.get(0).get("durable").asBoolean()).isTrue();
        assertThat(nodes.get(2).get("durable").asBoolean()).isFalse();
        assertThat(report.get("verdict").asText()).isEqualTo("WARN");
        assertThat(report.get("findings").toString())
            .contains("in restart quarantine", "locks work with the 2 other nodes");
      }
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
        assertThat(nodes.findValues("reachable")).as(p.out()).allMatch(JsonNode::asBoolean);
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
