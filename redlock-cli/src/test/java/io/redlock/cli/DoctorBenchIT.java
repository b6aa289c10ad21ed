package io.redlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** {@code redlock doctor} and {@code redlock bench} as processes, on the zero-setup default. */
@DisplayName("redlock doctor and bench, as processes, on the zero-setup default")
class DoctorBenchIT {
  private Path dir;
  private Map<String, String> env;

  @BeforeEach
  void setUp(TestInfo info) throws IOException {
    dir = CliProcess.testDir(info);
    env = Map.of("XDG_DATA_HOME", dir.resolve("xdg").toString());
  }

  /** What SQLite itself says, asked directly through the same driver the tool ships. */
  private static String sqlite(Path file, String query) throws SQLException {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(query)) {
      assertThat(rs.next()).as(query).isTrue();
      return rs.getString(1);
    }
  }

  private static Optional<String> bootId() throws IOException {
    Path p = Path.of("/proc/sys/kernel/random/boot_id");
    return Files.isReadable(p) ? Optional.of(Files.readString(p).strip()) : Optional.empty();
  }

  private JsonNode runDoctorJson(String... extra) throws IOException {
    List<String> args =
        new ArrayList<>(List.of("doctor", "--json", "--ttl", "60s", "--probes", "3"));
    args.addAll(List.of(extra));
    try (CliProcess p = CliProcess.start(dir, env, args.toArray(String[]::new))) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      return new ObjectMapper().readTree(p.out());
    }
  }

  @Test
  @DisplayName(
      "doctor --json reports three reachable SQLite nodes with sane latencies and their real"
          + " status: version, incarnation, uptime, durability")
  void doctorJson() throws Exception {
    long startedNanos = System.nanoTime();
    JsonNode report = runDoctorJson();
    double testSeconds = (System.nanoTime() - startedNanos) / 1e9;
    assertThat(report.at("/settings/nodes").asInt()).isEqualTo(3);
    assertThat(report.at("/settings/quorum").asInt()).isEqualTo(2);
    assertThat(report.at("/settings/zeroSetup").asBoolean()).isTrue();
    assertThat(report.at("/settings/ttlMs").asDouble()).isEqualTo(60_000.0);
    assertThat(report.at("/settings/nodeTimeoutMs").asDouble())
        .as("the library's default for a 60 s TTL")
        .isEqualTo(
            (double)
                io.redlock.RedlockSettings.defaults()
                    .nodeTimeoutFor(java.time.Duration.ofSeconds(60))
                    .toMillis());
    assertThat(report.at("/settings/restartQuarantineMs").isNull()).isTrue();
    assertThat(report.get("nodes")).hasSize(3);
    Optional<String> boot = bootId();
    Set<String> incarnations = new HashSet<>();
    int i = 0;
    for (JsonNode node : report.get("nodes")) {
      Path file = dir.resolve("xdg/redlock/node-" + ++i + ".db");
      assertThat(node.get("node").asText()).startsWith("jdbc:sqlite:" + file);
      assertThat(node.get("reachable").asBoolean()).isTrue();
      assertThat(node.get("roundTrips").asInt()).isEqualTo(9);
      double median = node.get("rttMedianMs").asDouble();
      double worst = node.get("rttWorstMs").asDouble();
      assertThat(median).isPositive().isLessThanOrEqualTo(worst);
      assertThat(worst).isLessThan(60_000.0);
      assertThat(node.get("anomalies")).isEmpty();
      assertThat(node.get("fencing").asBoolean()).isTrue();
      assertThat(node.get("reportsStatus").asBoolean()).isTrue();
      assertThat(node.get("statusError").isNull()).as(node.toString()).isTrue();
      // The real status, as SQLite itself reports it.
      String version = sqlite(file, "SELECT sqlite_version()");
      assertThat(node.get("serverVersion").asText()).as(node.toString()).isEqualTo(version);
      assertThat(node.at("/details/file").asText()).isEqualTo(file.toString());
      // The files were created by this run: their identity cannot be older than this test.
      assertThat(node.get("uptimeSeconds").isNumber()).as(node.toString()).isTrue();
      assertThat(node.get("uptimeSeconds").asDouble()).isNotNegative().isLessThan(testSeconds);
      JsonNode durable = node.get("durable");
      assertThat(durable.isBoolean()).as(node.toString()).isTrue();
      // Durable exactly when a file is synced on every commit (synchronous FULL=2 or EXTRA=3).
      int synchronous = Integer.parseInt(node.at("/details/synchronous").asText());
      String journal = node.at("/details/journal_mode").asText();
      assertThat(durable.asBoolean())
          .as(node.toString())
          .isEqualTo(synchronous >= 2 && !journal.equals("off") && !journal.equals("memory"));
      assertThat(node.get("quarantine").asText())
          .isEqualTo(durable.asBoolean() ? "not-needed" : "off");
      String incarnation = node.get("incarnation").asText();
      assertThat(incarnation).startsWith("sqlite-");
      boot.ifPresent(b -> assertThat(incarnation).as("includes the machine's boot id").endsWith(b));
      incarnations.add(incarnation);
      // SQLite runs in the tool's own process: its clock is this machine's, said so.
      assertThat(node.get("readsClock").asBoolean()).isTrue();
      assertThat(node.get("clockOffsetMs").isNumber()).as(node.toString()).isTrue();
      assertThat(Math.abs(node.get("clockOffsetMs").asDouble()))
          .as(node.toString())
          .isLessThan(node.get("clockOffsetUncertaintyMs").asDouble() + 2.0);
      assertThat(node.get("clockNote").asText()).contains("this machine's own clock", "SQLite");
    }
    assertThat(incarnations).as("every file has its own identity").hasSize(3);
    assertThat(report.get("verdict").asText()).isIn("OK", "WARN");
    assertThat(report.get("findings").toString()).contains("zero-setup default");

    JsonNode again = runDoctorJson();
    for (int n = 0; n < 3; n++) {
      JsonNode before = report.get("nodes").get(n);
      JsonNode after = again.get("nodes").get(n);
      assertThat(after.get("incarnation").asText())
          .as("a file that did not restart keeps its incarnation")
          .isEqualTo(before.get("incarnation").asText());
      assertThat(after.get("uptimeSeconds").asDouble())
          .isGreaterThanOrEqualTo(before.get("uptimeSeconds").asDouble());
    }
  }

  @Test
  @DisplayName("doctor --quarantine shows that the durable zero-setup files need no quarantine")
  void doctorQuarantine() throws IOException {
    JsonNode report = runDoctorJson("--quarantine", "1m");
    assertThat(report.at("/settings/restartQuarantineMs").asDouble()).isEqualTo(60_000.0);
    assertThat(report.at("/settings/quarantineWaitMs").asDouble()).isEqualTo(60_602.0);
    for (JsonNode node : report.get("nodes")) {
      assertThat(node.get("durable").asBoolean())
          .as("the zero-setup SQLite files are durable (synchronous=FULL): " + node)
          .isTrue();
      assertThat(node.get("quarantine").asText()).isEqualTo("not-needed");
      assertThat(node.get("quarantineLeftMs").isNull()).isTrue();
    }
    assertThat(report.get("findings").toString()).contains("every node is durable");
    try (CliProcess p = CliProcess.start(dir, env, "doctor", "--ttl", "2m", "--quarantine", "1m")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err()).contains("--ttl (2m) is longer than --quarantine (1m)");
    }
  }

  @Test
  @DisplayName("doctor prints a table by default, with each node's status")
  void doctorTable() throws Exception {
    try (CliProcess p = CliProcess.start(dir, env, "doctor", "--ttl", "60s", "--probes", "2")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      String version = sqlite(dir.resolve("xdg/redlock/node-1.db"), "SELECT sqlite_version()");
      assertThat(p.out())
          .contains("NODE", "RTT MEDIAN", "RTT WORST", "node-1.db", "node-3.db", "Verdict:")
          .contains("VERSION", "UPTIME", "DURABLE", "RESTART QUARANTINE", "INCARNATION")
          .contains("CLOCK OFFSET", " (this machine)")
          .contains("  " + version + "  ", "sqlite-", "restart quarantine off");
      assertThat(p.out().lines().filter(l -> l.contains("node-2.db")))
          .as("one row in each table")
          .hasSize(2);
    }
  }

  @Test
  @DisplayName(
      "doctor shows n/a for a third-party node that reports no status, real values for the others")
  void doctorWithoutStatus() throws IOException {
    Path xdg = dir.resolve("plain");
    // Spaces: after a comma, only scheme:// or jdbc: starts the next URI, and nocaps: does not.
    String nodes =
        String.join(
            " ",
            "jdbc:sqlite:" + xdg.resolve("a.db") + "?redlock.createTable=true",
            "jdbc:sqlite:" + xdg.resolve("b.db") + "?redlock.createTable=true",
            "nocaps:jdbc:sqlite:" + xdg.resolve("c.db") + "?redlock.createTable=true");
    Files.createDirectories(xdg);
    try (CliProcess p =
        CliProcess.startWithPlugin(
            dir, env, "doctor", "--json", "--ttl", "60s", "--nodes", nodes)) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      JsonNode list = new ObjectMapper().readTree(p.out()).get("nodes");
      for (JsonNode known : List.of(list.get(0), list.get(1))) {
        assertThat(known.get("reportsStatus").asBoolean()).isTrue();
        assertThat(known.get("serverVersion").isTextual()).as(known.toString()).isTrue();
        assertThat(known.get("durable").isBoolean()).isTrue();
      }
      JsonNode blind = list.get(2);
      assertThat(blind.get("node").asText()).startsWith("nocaps:jdbc:sqlite:");
      assertThat(blind.get("reachable").asBoolean()).as(blind.toString()).isTrue();
      assertThat(blind.get("reportsStatus").asBoolean()).isFalse();
      assertThat(blind.get("fencing").asBoolean()).isFalse();
      for (String field :
          List.of("serverVersion", "incarnation", "uptimeSeconds", "durable", "clockOffsetMs")) {
        assertThat(blind.get(field).isNull()).as(field + " not invented").isTrue();
      }
      assertThat(blind.get("readsClock").asBoolean()).isFalse();
      assertThat(blind.get("clockNote").asText()).contains("does not read the store's clock");
      assertThat(blind.get("quarantine").asText()).isEqualTo("n/a");
      assertThat(p.out())
          .contains("durability and restarts unknown", "no fencing counters on")
          .contains("clock offset unknown");
    }
    try (CliProcess p =
        CliProcess.startWithPlugin(dir, env, "doctor", "--ttl", "60s", "--nodes", nodes)) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      String row =
          p.out()
              .lines()
              .filter(l -> l.startsWith("nocaps:") && l.contains("n/a"))
              .findFirst()
              .orElseThrow(() -> new AssertionError(p.toString()));
      assertThat(row.split("\\s+")).as(row).containsSubsequence("n/a", "n/a", "n/a", "n/a", "n/a");
    }
    try (CliProcess p =
        CliProcess.startWithPlugin(dir, env, "doctor", "--quarantine", "1m", "--nodes", nodes)) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.out())
          .contains("UNSUPPORTED", "--quarantine needs every node to report its status");
    }
  }

  @Test
  @DisplayName("bench --json measures every cycle it was asked for")
  void benchJson() throws IOException {
    try (CliProcess p =
        CliProcess.start(
            dir, env, "bench", "--json", "--ops", "40", "--threads", "2", "--warmup", "5")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      JsonNode r = new ObjectMapper().readTree(p.out());
      assertThat(r.get("cycles").asLong()).isEqualTo(40);
      assertThat(r.get("acquired").asLong() + r.get("notAcquired").asLong()).isEqualTo(40);
      assertThat(r.get("acquired").asLong()).isPositive();
      assertThat(r.at("/acquire/count").asLong()).isEqualTo(40);
      assertThat(r.at("/acquire/p50Ms").asDouble())
          .isPositive()
          .isLessThanOrEqualTo(r.at("/acquire/p99Ms").asDouble());
      assertThat(r.at("/acquire/maxMs").asDouble())
          .isGreaterThanOrEqualTo(r.at("/acquire/p99Ms").asDouble());
      assertThat(r.get("cyclesPerSecond").asDouble()).isPositive();
      assertThat(p.err()).as("no progress bar without a terminal").doesNotContain("[#");
    }
  }

  @Test
  @DisplayName("bench prints percentiles as text by default")
  void benchText() {
    try (CliProcess p = CliProcess.start(dir, env, "bench", "--ops", "20", "--warmup", "2")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.out()).contains("cycles/s", "P50", "P99", "acquire", "release");
    }
  }
}
