package io.redlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.testservers.MariaDbServer;
import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServers;
import java.io.IOException;
import java.nio.file.Path;
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
 * What the tool prints on stderr, run after run (cron mails all of it): each thing said once, in
 * the tool's own terms. Real servers (Redis without persistence, PostgreSQL, MariaDB), the real
 * jar.
 */
@DisplayName("redlock says things once, in its own words")
class QuietWordsIT {
  private static RedisServers redis;
  private static PostgresServer pg1;
  private static PostgresServer pg2;
  private static MariaDbServer mariadb;

  /**
   * For nodes that must work: a table of their own, so that redlock_locks stays missing for the
   * tests that need it missing, whatever their order.
   */
  private static final String CREATED = "&redlock.table=quiet_words&redlock.createTable=true";

  private Path dir;

  @BeforeAll
  static void startServers() {
    redis = RedisServers.start(3);
    pg1 = PostgresServer.startLocal();
    pg2 = PostgresServer.startLocal();
    mariadb = MariaDbServer.startLocal();
  }

  @AfterAll
  static void stopServers() {
    for (AutoCloseable server : new AutoCloseable[] {redis, pg1, pg2, mariadb}) {
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

  private static int count(String text, String part) {
    Matcher m = Pattern.compile(Pattern.quote(part)).matcher(text);
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }

  private static String threeRedis() {
    return String.join(",", redis.uris());
  }

  @Test
  @DisplayName(
      "nodes that keep their locks in memory only are named once, as the zero-setup note is;"
          + " -v says it again")
  void notDurableSaidOnce() {
    // Each node is named once, in whichever run first hears its status (on a busy machine a
    // status may come too late for the first run): never twice, and nothing else is printed.
    java.util.Set<String> named = new java.util.HashSet<>();
    Pattern note =
        Pattern.compile("keeps? (?:its|their) locks in memory only: ([^ ]+(?:, [^ ]+)*)\\.");
    for (int run = 1; run <= 3; run++) {
      try (CliProcess p = redlock("exec", "--nodes", threeRedis(), "cron", "--", "true")) {
        assertThat(p.exitCode()).as(p.toString()).isZero();
        String err = p.err();
        assertThat(err).as(p.toString()).doesNotContain("[WARN]", "restartQuarantine(");
        assertThat(err.lines().filter(l -> !l.startsWith("redlock: note: ")))
            .as("run " + run + ": nothing but the note: " + p)
            .isEmpty();
        Matcher m = note.matcher(err);
        if (m.find()) {
          assertThat(err).contains("--quarantine");
          for (String node : m.group(1).split(", ")) {
            assertThat(named.add(node))
                .as("run " + run + " names " + node + " again: " + p)
                .isTrue();
          }
        }
      }
    }
    assertThat(named).as("the nodes named").isNotEmpty();
    try (CliProcess p = redlock("exec", "-v", "--nodes", threeRedis(), "cron", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.err()).as(p.toString()).contains("memory only");
    }
  }

  @Test
  @DisplayName("a table missing on two nodes: exit 78, and its DDL printed once")
  void ddlOnce() {
    String nodes = String.join(",", pg1.jdbcUrl(), pg2.jdbcUrl(), redis.get(0).uri());
    try (CliProcess p = redlock("exec", "--nodes", nodes, "ddl", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(78);
      assertThat(count(p.err(), "CREATE TABLE")).as(p.toString()).isEqualTo(1);
      assertThat(count(p.err(), "table redlock_locks does not exist"))
          .as("each node named with its cause: " + p)
          .isEqualTo(2);
      assertThat(p.err()).doesNotContain("createTable(true)");
    }
  }

  @Test
  @DisplayName("-v shows Redlock's debug lines, and the third-party libraries' only from INFO up")
  void verboseWithoutNettyDebug() {
    String nodes = String.join(",", pg1.uri() + CREATED, redis.get(0).uri(), redis.get(1).uri());
    try (CliProcess p = redlock("exec", "-v", "--nodes", nodes, "verbose", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      List<String> debug = p.err().lines().filter(l -> l.startsWith("[DEBUG]")).toList();
      assertThat(debug).as(p.toString()).isNotEmpty();
      assertThat(debug)
          .as("Redlock's own loggers only")
          .noneMatch(
              l ->
                  l.matches(
                      "\\[DEBUG\\] (PlatformDependent0?|Recycler|NetUtil|DnsNameResolver"
                          + "|ResourceLeakDetector|ByteBufUtil|InternalThreadLocalMap"
                          + "|DefaultChannelId|NioIoHandler|AbstractByteBuf) .*"));
    }
  }

  @Test
  @DisplayName("the password warning shows the URI's own scheme with a variable, not redis://")
  void passwordHintInTheUrisScheme() {
    String pgWithPassword = pg1.uri() + CREATED;
    try (CliProcess p =
        redlock(
            "exec",
            "--nodes",
            String.join(",", pgWithPassword, redis.get(0).uri(), redis.get(1).uri()),
            "hint",
            "--",
            "true")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.err())
          .contains("--nodes 'postgresql://postgres:${POSTGRESQL_PASSWORD}@127.0.0.1:")
          .doesNotContain("redis://:${", PostgresServer.PASSWORD);
    }
  }

  @Test
  @DisplayName(
      "a wrong MariaDB password names MariaDB's remedy, not pg_hba.conf, with the account intact")
  void mariaDbAuthHint() {
    String bad =
        mariadb.jdbcUrl().replace(MariaDbServer.PASSWORD, "wrong-pw") + "&redlock.createTable=true";
    try (CliProcess p =
        redlock(
            "exec",
            "--nodes",
            String.join(",", bad, redis.get(0).uri(), redis.get(1).uri()),
            "maria",
            "--",
            "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(78);
      assertThat(p.err())
          .contains("authentication failed", "'redlock'@'127.0.0.1'", "allowed hosts, GRANTs")
          .doesNotContain("pg_hba.conf", "wrong-pw");
    }
  }

  @Test
  @DisplayName(
      "Java advice becomes the tool's flags: --no-strict, not strictNodes(false); no"
          + " allowSharedServers()")
  void flagsNotJava() {
    String nodes = String.join(",", redis.get(0).uri(), redis.get(1).uri(), pg1.jdbcUrl());
    try (CliProcess p = redlock("exec", "--nodes", nodes, "java", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(78);
      assertThat(p.err())
          .contains("--strict is on (the default)", "run with --no-strict")
          .doesNotContain("strictNodes", "cannot build the Redlock");
    }
    int port = redis.get(0).port();
    String twice =
        String.join(
            ",",
            "redis://127.0.0.1:" + port + "/0",
            "redis://127.0.0.1:" + port + "/1",
            redis.get(1).uri());
    try (CliProcess p = redlock("exec", "--nodes", twice, "twice", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(78);
      assertThat(p.err()).contains("one server listed twice").doesNotContain("allowSharedServers");
    }
  }

  @Test
  @DisplayName(
      "usage messages: a JDBC URL listed twice keeps its closing quote; only schemes with a"
          + " driver are offered; the duration hint names 30s once")
  void usageMessages() {
    try (CliProcess p =
        redlock(
            "exec",
            "--nodes",
            String.join(",", pg1.jdbcUrl(), pg1.jdbcUrl(), redis.get(0).uri()),
            "dup",
            "--",
            "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err()).contains("password=***' is listed twice");
    }
    try (CliProcess p = redlock("exec", "--nodes", "nosuch://h:1", "x", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err())
          .contains("Schemes available: jdbc:h2, jdbc:mariadb, jdbc:postgresql, jdbc:sqlite,")
          .doesNotContain("jdbc:mysql");
    }
    try (CliProcess p = redlock("doctor", "--nodes", threeRedis())) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.out()).as(p.toString()).contains("jdbc:mariadb").doesNotContain("jdbc:mysql");
    }
    try (CliProcess p = redlock("exec", "--ttl", "30x", "x", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      Matcher thirty = Pattern.compile("(?<![\\w.])30s\\b").matcher(p.err());
      assertThat(thirty.results().count()).as("30s, apart from 1m30s: " + p).isEqualTo(1);
    }
  }
}
