package io.redlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
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
    dir =
        Files.createDirectories(
            Path.of(
                    "target",
                    "it",
                    info.getTestMethod().orElseThrow().getName() + "-" + UUID.randomUUID())
                .toAbsolutePath());
    env = Map.of("XDG_DATA_HOME", dir.resolve("xdg").toString());
  }

  @Test
  @DisplayName("doctor --json reports three reachable SQLite nodes with sane latencies")
  void doctorJson() throws IOException {
    try (CliProcess p =
        CliProcess.start(dir, env, "doctor", "--json", "--ttl", "10s", "--probes", "3")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      JsonNode report = new ObjectMapper().readTree(p.out());
      assertThat(report.at("/settings/nodes").asInt()).isEqualTo(3);
      assertThat(report.at("/settings/quorum").asInt()).isEqualTo(2);
      assertThat(report.at("/settings/zeroSetup").asBoolean()).isTrue();
      assertThat(report.at("/settings/ttlMs").asDouble()).isEqualTo(10_000.0);
      assertThat(report.at("/settings/nodeTimeoutMs").asDouble()).isEqualTo(50.0);
      assertThat(report.get("nodes")).hasSize(3);
      for (JsonNode node : report.get("nodes")) {
        assertThat(node.get("node").asText()).startsWith("jdbc:sqlite:" + dir);
        assertThat(node.get("reachable").asBoolean()).isTrue();
        assertThat(node.get("roundTrips").asInt()).isEqualTo(9);
        double median = node.get("rttMedianMs").asDouble();
        double worst = node.get("rttWorstMs").asDouble();
        assertThat(median).isPositive().isLessThanOrEqualTo(worst);
        assertThat(worst).isLessThan(10_000.0);
        assertThat(node.get("anomalies")).isEmpty();
        assertThat(node.get("serverVersion").isNull()).as("not invented").isTrue();
      }
      assertThat(report.get("verdict").asText()).isIn("OK", "WARN");
      assertThat(report.get("findings").toString()).contains("zero-setup default");
    }
  }

  @Test
  @DisplayName("doctor prints a table by default")
  void doctorTable() {
    try (CliProcess p = CliProcess.start(dir, env, "doctor", "--probes", "2")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.out())
          .contains("NODE", "RTT MEDIAN", "RTT WORST", "node-1.db", "node-3.db", "Verdict:", "n/a");
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
