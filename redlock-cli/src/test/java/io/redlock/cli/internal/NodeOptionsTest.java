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

  @Test
  @DisplayName("REDLOCK_NODES set but empty is an error, not the zero-setup default")
  void emptyNodesVariable(@TempDir Path dir) {
    assertThatThrownBy(
            () ->
                new NodeOptions()
                    .select(Map.of("REDLOCK_NODES", " ", "XDG_DATA_HOME", dir.toString()), err))
        .isInstanceOfSatisfying(
            CliException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCodes.USAGE))
        .hasMessageContaining("REDLOCK_NODES is set but empty");
    assertThat(dir.resolve("redlock")).doesNotExist();
  }

  @Test
  @DisplayName(
      "${VAR} in a URI is read from the environment; a variable where a password goes counts as a"
          + " credential, as does a REDLOCK_NODES that holds a password")
  void variables() {
    NodeOptions o = new NodeOptions();
    o.nodes = List.of("redis://:${PW}@${HOST}:6379,redis://b:1?password=${PW2}");

    NodeOptions.Selection s =
        o.select(Map.of("PW", "s3cret", "HOST", "a", "PW2", "x y", "OTHER", "1"), err);

    assertThat(s.uris()).containsExactly("redis://:s3cret@a:6379", "redis://b:1?password=x y");
    assertThat(s.credentialVariables()).containsExactlyInAnyOrder("PW", "PW2");
    assertThatThrownBy(() -> o.select(Map.of("HOST", "a"), err))
        .hasMessageContaining("refers to ${PW}, but the environment variable PW is not set")
        .hasMessageNotContaining("s3cret");

    NodeOptions.Selection env =
        new NodeOptions().select(Map.of("REDLOCK_NODES", "redis://:pw@a:1 redis://b:2"), err);
    assertThat(env.credentialVariables()).containsExactly("REDLOCK_NODES");
    NodeOptions.Selection plain =
        new NodeOptions().select(Map.of("REDLOCK_NODES", "redis://a:1 redis://b:2"), err);
    assertThat(plain.credentialVariables()).isEmpty();
  }

  @Test
  @DisplayName("a password written in --nodes gets a warning: it shows in ps")
  void passwordOnCommandLine() {
    NodeOptions o = new NodeOptions();
    o.nodes = List.of("redis://:s3cret@a:6379");

    o.select(Map.of(), err);

    assertThat(errBytes.toString(StandardCharsets.UTF_8))
        .contains("warning: a password written in --nodes shows in ps")
        .doesNotContain("s3cret");
  }

  @Test
  @DisplayName("a port that is not a number from 1 to 65535 is named as the problem")
  void badPorts() {
    for (String uri :
        List.of(
            "redis://127.0.0.1:notaport",
            "redis://:p@ss@h:6x79/0",
            "mongodb://a:27017,b:nope/db",
            "jdbc:postgresql://h:70000/db",
            "redis://[::1]:x")) {
      NodeOptions o = new NodeOptions();
      o.nodes = List.of(uri);
      assertThatThrownBy(() -> o.select(Map.of(), err))
          .as(uri)
          .isInstanceOf(CliException.class)
          .hasMessageContaining("has a bad port");
    }
    for (String uri :
        List.of(
            "redis://127.0.0.1:6379/0",
            "redis://:pa/ss@h:1",
            "mongodb://a:27017,b:27018/db?x=1:2",
            "jdbc:sqlite:/tmp/a.db?redlock.createTable=true",
            "jdbc:h2:mem:x",
            "redis://[::1]:6379",
            "redis://host")) {
      NodeOptions o = new NodeOptions();
      o.nodes = List.of(uri);
      assertThat(o.select(Map.of(), err).uris()).as(uri).hasSize(1);
    }
  }

  @Test
  @DisplayName("the zero-setup note is printed once per data directory, then a README marks it")
  void zeroSetupNoteOnce(@TempDir Path dir) {
    Map<String, String> env = Map.of("XDG_DATA_HOME", dir.toString());
    new NodeOptions().select(env, err);
    new NodeOptions().select(env, err);

    assertThat(errBytes.toString(StandardCharsets.UTF_8)).containsOnlyOnce("no nodes configured");
    assertThat(dir.resolve("redlock").resolve(NodeOptions.ZERO_SETUP_MARKER))
        .content()
        .contains("zero-setup quorum");
  }
}
