package io.redlock.cli;

import static io.redlock.cli.CliProcess.awaitFile;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Issue 17 against real servers: three Redis (and one with a password) and two PostgreSQL, started
 * by the test, some of them misconfigured, paused or stopped on purpose, with the real jar as a
 * process.
 */
@DisplayName("redlock exec and doctor on real nodes that fail")
class ExecRealNodesIT {
  private static final String SECRET = "real-nodes-s3cret";

  private static RedisServers redis;
  private static RedisServer redisWithPassword;
  private static PostgresServer pg1;
  private static PostgresServer pg2;

  private Path dir;

  @BeforeAll
  static void startServers() {
    redis = RedisServers.start(3);
    redisWithPassword = RedisServer.builder().password(SECRET).start();
    pg1 = PostgresServer.startLocal();
    pg2 = PostgresServer.startLocal();
  }

  @AfterAll
  static void stopServers() {
    for (AutoCloseable server : new AutoCloseable[] {redis, redisWithPassword, pg1, pg2}) {
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

  private static String pg(PostgresServer server) {
    return server.jdbcUrl() + "&redlock.createTable=true";
  }

  /** Three Redis and two PostgreSQL: a quorum of 3 of 5. */
  private static String five() {
    List<String> uris = new ArrayList<>(redis.uris());
    uris.add(pg(pg1));
    uris.add(pg(pg2));
    return String.join(",", uris);
  }

  private static long seconds(long nanos) {
    return Duration.ofNanos(nanos).toMillis();
  }

  @Test
  @DisplayName(
      "1, 2: nodes that fail in a way no retry fixes (a wrong Redis password) stop exec at once"
          + " with 78, naming each node and cause; --no-strict outvotes one with a warning line,"
          + " and -v counts only the nodes that granted")
  void misconfiguredNodes() {
    String bad = "redis://:wrong-pw@127.0.0.1:" + redisWithPassword.port();
    String badName = "redis://127.0.0.1:" + redisWithPassword.port();
    String good = redis.get(0).uri();
    // Two of three fail: no quorum is possible, strict or not.
    for (boolean strict : new boolean[] {true, false}) {
      List<String> args = new ArrayList<>(List.of("exec", "--wait", "30s"));
      if (!strict) {
        args.add("--no-strict");
      }
      args.addAll(
          List.of("--nodes", String.join(",", good, bad + "/0", bad + "/1"), "m", "--", "true"));
      long t0 = System.nanoTime();
      try (CliProcess p = redlock(Map.of(), args.toArray(String[]::new))) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(78);
        assertThat(seconds(System.nanoTime() - t0))
            .as("at once, not after the 30 s wait")
            .isLessThan(10_000);
        assertThat(p.err())
            .contains("nodes misconfigured", "no retry fixes")
            .doesNotContain("wrong-pw", SECRET);
        List<String> nodeLines = p.err().lines().filter(l -> l.startsWith("redlock:   ")).toList();
        assertThat(nodeLines).as("one line per node, with its cause: " + p).hasSize(2);
        assertThat(nodeLines.get(0)).contains(badName + "/0", "authentication failed");
        assertThat(nodeLines.get(1)).contains(badName + "/1", "authentication failed");
      }
    }
    // One of three: strict (the default) refuses, naming it.
    String oneBad = String.join(",", good, redis.get(1).uri(), bad);
    try (CliProcess p = redlock(Map.of(), "exec", "--nodes", oneBad, "m", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(78);
      assertThat(p.err())
          .contains("--strict is on", badName, "authentication failed")
          .doesNotContain("wrong-pw");
    }
    try (CliProcess p =
        redlock(Map.of(), "exec", "-v", "--no-strict", "--nodes", oneBad, "m", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      List<String> warnings =
          p.err().lines().filter(l -> l.startsWith("redlock: warning: ")).toList();
      assertThat(warnings)
          .as(p.toString())
          .anySatisfy(w -> assertThat(w).contains("a password written in --nodes"))
          .filteredOn(w -> w.contains(badName))
          .singleElement()
          .satisfies(
              w ->
                  assertThat(w)
                      .contains("authentication failed", "no retry fixes this")
                      .doesNotContain("wrong-pw"));
      assertThat(p.err()).contains("acquired 'm' on 2 of 3 nodes").doesNotContain("on 3 nodes");
    }
  }

  @Test
  @DisplayName(
      "2: doctor fails, as exec does, when one Redis is listed twice (/0 and /1: the same"
          + " run_id); exec warns about an even node count")
  void sameServerAndEvenCount() throws IOException {
    RedisServer one = redis.get(0);
    String twice =
        String.join(
            ",",
            "redis://127.0.0.1:" + one.port() + "/0",
            "redis://127.0.0.1:" + one.port() + "/1",
            redis.get(1).uri());
    try (CliProcess p = redlock(Map.of(), "doctor", "--json", "--nodes", twice)) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(78);
      JsonNode report = new ObjectMapper().readTree(p.out());
      assertThat(report.get("verdict").asText()).isEqualTo("FAIL");
      JsonNode same = null;
      for (JsonNode f : report.get("findings")) {
        if (f.get("topic").asText().equals("SAME_SERVER")) {
          same = f;
        }
      }
      assertThat(same).as(report.get("findings").toString()).isNotNull();
      assertThat(same.get("message").asText())
          .contains(
              "redis://127.0.0.1:" + one.port() + "/0 and redis://127.0.0.1:" + one.port() + "/1")
          .contains("only 2 independent servers");
    }
    String four =
        String.join(",", redis.get(0).uri(), redis.get(1).uri(), redis.get(2).uri(), pg(pg1));
    try (CliProcess p = redlock(Map.of(), "exec", "--nodes", four, "even", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.err())
          .containsOnlyOnce("warning: 4 nodes tolerate no more failures than 3 do; use an odd");
    }
  }

  @Test
  @DisplayName(
      "5, 7: when a majority of nodes stops answering, the command gets SIGTERM while the lock is"
          + " still valid, and LOCK LOST names the nodes instead of blaming a pause")
  void lossWhileNodesHang() throws Exception {
    Map<String, String> env = Map.of("REDLOCK_NODES", String.join(",", redis.uris()));
    String script =
        "trap 'date +%s%N > term.tmp; mv term.tmp term; exit 3' TERM; touch started;"
            + " i=0; while [ $i -lt 600 ]; do sleep 0.05 & wait; i=$((i+1)); done";
    // A margin of 2 s: ample against the scheduling delays of a loaded 2-core machine.
    try (CliProcess a =
        redlock(
            env, "exec", "--ttl", "6s", "--loss-margin", "2s", "hang", "--", "sh", "-c", script)) {
      awaitFile(dir.resolve("started"), a);
      redis.get(1).pause();
      redis.get(2).pause();
      try {
        // Watch the key on the node that still answers: when does it expire there?
        long expiresAt = Long.MAX_VALUE;
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!Files.exists(dir.resolve("term")) && System.nanoTime() - deadline < 0) {
          String pttl = redis.get(0).command("PTTL", "hang");
          long now = System.currentTimeMillis();
          if (pttl != null && Long.parseLong(pttl.replace(":", "").strip()) > 0) {
            expiresAt = now + Long.parseLong(pttl.replace(":", "").strip());
          }
          Thread.sleep(10);
        }
        assertThat(a.exitCode(Duration.ofSeconds(30))).as(a.toString()).isEqualTo(79);
        long termAt = Long.parseLong(Files.readString(dir.resolve("term")).strip()) / 1_000_000;
        assertThat(termAt)
            .as("SIGTERM came before the key expired on the node that still held it")
            .isLessThan(expiresAt);
      } finally {
        redis.get(1).resume();
        redis.get(2).resume();
      }
      String err = a.err();
      assertThat(err)
          .contains("LOCK LOST: 'hang': it could not be extended")
          .contains(redis.get(1).uri() + "/0", redis.get(2).uri() + "/0")
          .contains("It stays valid for at most another")
          .doesNotContain("paused", "Another process may hold it now");
      assertThat(validityLeftMillis(err)).isPositive();
    }
  }

  /** The validity LOCK LOST says is left, e.g. "1.95 s" or "880 ms", in milliseconds. */
  private static double validityLeftMillis(String err) {
    Matcher m = Pattern.compile("valid for at most another ([0-9.]+) (ms|s)\\b").matcher(err);
    assertThat(m.find()).as(err).isTrue();
    double value = Double.parseDouble(m.group(1));
    return m.group(2).equals("s") ? value * 1_000 : value;
  }

  @Test
  @DisplayName(
      "5: a command that ignores SIGTERM is killed after the default grace, which is shorter than"
          + " the margin of validity left at the loss")
  void graceShorterThanMargin() throws Exception {
    Map<String, String> env = Map.of("REDLOCK_NODES", String.join(",", redis.uris()));
    String script =
        "trap '' TERM; echo $$ > pid; touch started;"
            + " i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done";
    // A margin of 2 s, so half of it (the default grace) is 1 s.
    try (CliProcess a =
        redlock(
            env, "exec", "--ttl", "6s", "--loss-margin", "2s", "deaf", "--", "sh", "-c", script)) {
      awaitFile(dir.resolve("started"), a);
      redis.get(1).pause();
      redis.get(2).pause();
      try {
        assertThat(a.exitCode(Duration.ofSeconds(30))).as(a.toString()).isEqualTo(79);
      } finally {
        redis.get(1).resume();
        redis.get(2).resume();
      }
      String err = a.err();
      Matcher grace = Pattern.compile("SIGKILL after ([0-9.]+)s\\)").matcher(err);
      assertThat(grace.find()).as(err).isTrue();
      assertThat(grace.group(1)).as("the default grace: half the margin").isEqualTo("1");
      assertThat(1_000.0)
          .as("the grace fits in the validity left at the loss")
          .isLessThan(validityLeftMillis(err));
      assertThat(err).contains("did not stop within 1s of SIGTERM; killing it");
    }
  }

  @Test
  @DisplayName(
      "prompt exits: a held lock with --wait 2s, and 3 of 5 nodes hanging with --wait 3s, end"
          + " within the wait + one node timeout + about half a second; doctor within its budget")
  void promptExits() throws Exception {
    Map<String, String> env = Map.of("REDLOCK_NODES", five());
    // Beyond the bound: the JVM's start on a busy 2-core machine.
    long jvm = 1_500;
    long nodeTimeout =
        io.redlock.RedlockSettings.defaults().nodeTimeoutFor(Duration.ofSeconds(30)).toMillis();
    try (CliProcess holder =
        redlock(env, "exec", "--ttl", "60s", "held", "--", "sh", "-c", "touch held; sleep 60")) {
      awaitFile(dir.resolve("held"), holder);
      long t0 = System.nanoTime();
      try (CliProcess p = redlock(env, "exec", "--wait", "2s", "held", "--", "true")) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(75);
      }
      assertThat(seconds(System.nanoTime() - t0)).isLessThan(2_000 + nodeTimeout + 500 + jvm);
      holder.signal("TERM");
      holder.exitCode();
    }
    redis.get(1).pause();
    redis.get(2).pause();
    pg2.pause();
    try {
      long t0 = System.nanoTime();
      try (CliProcess p = redlock(env, "exec", "--wait", "3s", "down", "--", "true")) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(69);
      }
      assertThat(seconds(System.nanoTime() - t0)).isLessThan(3_000 + nodeTimeout + 500 + jvm);
      t0 = System.nanoTime();
      try (CliProcess p = redlock(env, "doctor")) {
        assertThat(p.exitCode()).as(p.toString()).isEqualTo(69);
        assertThat(p.out()).contains("only 2 of 5 nodes are reachable");
      }
      assertThat(seconds(System.nanoTime() - t0))
          .as("doctor's default budget is 6 s")
          .isLessThan(6_000 + 500 + jvm);
    } finally {
      redis.get(1).resume();
      redis.get(2).resume();
      pg2.resume();
    }
  }

  @Test
  @DisplayName(
      "prompt exits: with a PostgreSQL node hanging, exec ends soon after its command does"
          + " (closing the connection pools does not hold it)")
  void promptExitWithHangingPostgres() throws Exception {
    Map<String, String> env = Map.of("REDLOCK_NODES", five());
    pg2.pause();
    try (CliProcess p = redlock(env, "exec", "quick", "--", "sh", "-c", "date +%s%N > ended")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      long ended = Long.parseLong(Files.readString(dir.resolve("ended")).strip()) / 1_000_000;
      long exited = System.currentTimeMillis();
      long nodeTimeout =
          io.redlock.RedlockSettings.defaults().nodeTimeoutFor(Duration.ofSeconds(30)).toMillis();
      assertThat(exited - ended)
          .as("from the command's end to redlock's exit: the release's node timeout, and a moment")
          .isLessThan(nodeTimeout + 1_000);
    } finally {
      pg2.resume();
    }
  }

  /** Whether PostgreSQL still has a live key for {@code lock}. */
  private static boolean pgHolds(PostgresServer server, String lock) throws SQLException {
    try (Connection c = DriverManager.getConnection(server.jdbcUrl());
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM redlock_locks WHERE lock_key = ? AND expires_at > now()")) {
      ps.setString(1, lock);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1) > 0;
      }
    }
  }

  @Test
  @DisplayName(
      "a release while both PostgreSQL nodes stall for 1.5 s after a fast command leaves no key"
          + " behind, and says nothing was left")
  void releaseWhilePostgresStalls() throws Exception {
    Map<String, String> env = Map.of("REDLOCK_NODES", five());
    String script =
        "touch done; i=0; while [ ! -f go ] && [ $i -lt 300 ]; do sleep 0.02; i=$((i+1)); done";
    try (CliProcess p = redlock(env, "exec", "--ttl", "2m", "stall", "--", "sh", "-c", script)) {
      awaitFile(dir.resolve("done"), p);
      Thread.sleep(700); // idle connections are validated before reuse: that too must wait
      pg1.pause();
      pg2.pause();
      try {
        Files.createFile(dir.resolve("go"));
        Thread.sleep(1_500);
      } finally {
        pg1.resume();
        pg2.resume();
      }
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.err()).doesNotContain("expires by its TTL");
    }
    assertThat(pgHolds(pg1, "stall")).as("key left on " + pg1.jdbcUrl()).isFalse();
    assertThat(pgHolds(pg2, "stall")).as("key left on the second PostgreSQL").isFalse();
  }

  @Test
  @DisplayName(
      "8: a password given as ${VAR} stays out of ps and out of the command's environment, as"
          + " does a REDLOCK_NODES that holds one; a password written in --nodes gets a warning")
  void secrets() throws Exception {
    String withRef =
        String.join(
            ",",
            "redis://:${RL_TEST_PW}@127.0.0.1:" + redisWithPassword.port(),
            redis.get(0).uri(),
            redis.get(1).uri());
    Map<String, String> env = new HashMap<>();
    env.put("RL_TEST_PW", SECRET);
    String script = "env > childenv; touch started; sleep 1";
    try (CliProcess p = redlock(env, "exec", "--nodes", withRef, "sec", "--", "sh", "-c", script)) {
      awaitFile(dir.resolve("started"), p);
      String cmdline =
          Files.readString(Path.of("/proc", Long.toString(p.process.pid()), "cmdline"));
      assertThat(cmdline).contains("${RL_TEST_PW}").doesNotContain(SECRET);
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(Files.readString(dir.resolve("childenv")))
          .doesNotContain(SECRET)
          .doesNotContain("RL_TEST_PW=")
          .contains("REDLOCK_TOKEN=");
      assertThat(p.err()).doesNotContain("warning");
    }
    Files.delete(dir.resolve("childenv"));
    Map<String, String> literal = Map.of("REDLOCK_NODES", withRef.replace("${RL_TEST_PW}", SECRET));
    try (CliProcess p = redlock(literal, "exec", "sec", "--", "sh", "-c", "env > childenv")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(Files.readString(dir.resolve("childenv")))
          .doesNotContain(SECRET)
          .doesNotContain("REDLOCK_NODES=");
    }
    try (CliProcess p =
        redlock(
            Map.of(),
            "exec",
            "--nodes",
            withRef.replace("${RL_TEST_PW}", SECRET),
            "sec",
            "--",
            "true")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.err())
          .contains("warning: a password written in --nodes shows in ps")
          .doesNotContain(SECRET);
    }
  }
}
