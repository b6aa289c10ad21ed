package io.redlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@DisplayName("Choosing the nodes")
class NodeOptionsTest {
  private final ByteArrayOutputStream errBytes = new ByteArrayOutputStream();
  private final PrintStream err = new PrintStream(errBytes, true, StandardCharsets.UTF_8);

  @Test
  @DisplayName("--nodes wins over the environment, and may be repeated")
  void nodesOptionWins() {
    NodeOptions o = new NodeOptions();
    o.nodes = List.of("redis://a:1,redis://b:2", "redis://c:3");

    NodeOptions.Selection s = o.select(Map.of("REDLOCK_NODES", "redis://env:1"), err);

    assertThat(s.uris()).containsExactly("redis://a:1", "redis://b:2", "redis://c:3");
    assertThat(s.source()).isEqualTo("--nodes");
    assertThat(s.zeroSetup()).isFalse();
  }

  @Test
  @DisplayName("REDLOCK_NODES is used when no option names nodes")
  void environment() {
    NodeOptions.Selection s =
        new NodeOptions().select(Map.of("REDLOCK_NODES", "redis://env:1 redis://env:2"), err);

    assertThat(s.uris()).containsExactly("redis://env:1", "redis://env:2");
    assertThat(s.source()).isEqualTo("environment variable REDLOCK_NODES");
  }

  @Test
  @DisplayName("a config file gives nodes and timing settings; unknown keys are refused")
  void configFile(@TempDir Path dir) throws IOException {
    Path good =
        Files.writeString(
            dir.resolve("good.properties"),
            "nodes=redis://f:1,redis://f:2\nnode-timeout=40ms\ndrift-factor=0.02\n");
    Path bad = Files.writeString(dir.resolve("bad.properties"), "nodes=redis://f:1\nttl=3s\n");
    NodeOptions o = new NodeOptions();
    o.config = good;

    NodeOptions.Selection s = o.select(Map.of(), err);

    assertThat(s.uris()).containsExactly("redis://f:1", "redis://f:2");
    assertThat(s.nodeTimeout()).isEqualTo(Duration.ofMillis(40));
    assertThat(s.driftFactor()).isEqualTo(0.02);
    o.config = bad;
    assertThatThrownBy(() -> o.select(Map.of(), err))
        .isInstanceOf(CliException.class)
        .hasMessageContaining("unknown keys [ttl]; known keys: [drift-factor, node-timeout, nodes]")
        .extracting(e -> ((CliException) e).exitCode())
        .isEqualTo(64);
  }

  @Test
  @DisplayName(
      "with nothing configured, three SQLite files under XDG_DATA_HOME are used and it says so")
  void zeroSetup(@TempDir Path dir) {
    NodeOptions.Selection s =
        new NodeOptions().select(Map.of("XDG_DATA_HOME", dir.toString()), err);

    Path data = dir.resolve("redlock");
    assertThat(s.zeroSetup()).isTrue();
    assertThat(s.uris())
        .containsExactly(
            "jdbc:sqlite:" + data.resolve("node-1.db") + "?redlock.createTable=true",
            "jdbc:sqlite:" + data.resolve("node-2.db") + "?redlock.createTable=true",
            "jdbc:sqlite:" + data.resolve("node-3.db") + "?redlock.createTable=true");
    assertThat(data).isDirectory();
    assertThat(errBytes.toString(StandardCharsets.UTF_8))
        .contains("no nodes configured", "zero-setup", data.toString());
  }

  @Test
  @DisplayName("a relative XDG_DATA_HOME is ignored, as the XDG specification requires")
  void relativeXdgIsIgnored() {
    assertThat(NodeOptions.dataDir(Map.of("XDG_DATA_HOME", "relative/dir")))
        .isEqualTo(Path.of(System.getProperty("user.home"), ".local", "share", "redlock"));
  }
}
