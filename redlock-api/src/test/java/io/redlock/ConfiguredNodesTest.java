package io.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@DisplayName("ConfiguredNodes: node lists from properties, variables and files")
class ConfiguredNodesTest {

  @Test
  @DisplayName("a list splits on commas and whitespace")
  void splitsOnCommasAndWhitespace() {
    assertThat(ConfiguredNodes.split(" redis://a:1,redis://b:2  jdbc:sqlite:/tmp/x.db,\n"))
        .containsExactly("redis://a:1", "redis://b:2", "jdbc:sqlite:/tmp/x.db");
  }

  @Test
  @DisplayName("${VAR} references expand from the environment, as in the CLI; unset ones are named")
  void expandsVariables() {
    ConfiguredNodes nodes =
        new ConfiguredNodes(
            List.of("redis://:${REDIS_PW}@a:6379", "postgresql://locks:${PG_PW}@h/db"),
            "environment variable REDLOCK_NODES");
    assertThat(nodes.expand(Map.of("REDIS_PW", "s3cr$t\\x", "PG_PW", "pg pw")).uris())
        .containsExactly("redis://:s3cr$t\\x@a:6379", "postgresql://locks:pg pw@h/db");
    assertThat(ConfiguredNodes.variables("redis://:${REDIS_PW}@a:${PORT}"))
        .containsExactly("REDIS_PW", "PORT");
    assertThatThrownBy(() -> nodes.expand(Map.of("REDIS_PW", "x")))
        .isInstanceOf(RedlockNonTransientException.class)
        .hasMessageContaining("refers to ${PG_PW}, but the environment variable PG_PW is not set")
        .hasMessageContaining("environment variable REDLOCK_NODES")
        .hasMessageNotContaining("pg pw");
  }

  @Test
  @DisplayName("commas inside a MongoDB seed list stay in the URI")
  void keepsMongoSeedLists() {
    assertThat(
            ConfiguredNodes.split(
                "mongodb://h1:27017,h2:27017,h3:27017/locks?replicaSet=rs,redis://r:6379"))
        .containsExactly(
            "mongodb://h1:27017,h2:27017,h3:27017/locks?replicaSet=rs", "redis://r:6379");
  }

  @Test
  @DisplayName("the system property wins over the environment, which wins over a file")
  void precedence(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("redlock.properties");
    Files.writeString(file, "nodes=redis://file:1\n", StandardCharsets.UTF_8);
    Properties props = new Properties();
    props.setProperty("redlock.nodes", "redis://prop:1");
    Map<String, String> env =
        Map.of("REDLOCK_NODES", "redis://env:1", "REDLOCK_CONFIG", file.toString());

    assertThat(ConfiguredNodes.find(env, props))
        .get()
        .satisfies(c -> assertThat(c.uris()).containsExactly("redis://prop:1"))
        .satisfies(c -> assertThat(c.source()).isEqualTo("system property redlock.nodes"));
    assertThat(ConfiguredNodes.find(env, new Properties()))
        .get()
        .satisfies(c -> assertThat(c.uris()).containsExactly("redis://env:1"));
    assertThat(ConfiguredNodes.find(Map.of("REDLOCK_CONFIG", file.toString()), new Properties()))
        .get()
        .satisfies(c -> assertThat(c.uris()).containsExactly("redis://file:1"))
        .satisfies(c -> assertThat(c.source()).contains("REDLOCK_CONFIG"));
    assertThat(ConfiguredNodes.find(Map.of(), new Properties())).isEmpty();
  }

  @Test
  @DisplayName("a missing file or a file without nodes says what to fix")
  void badFiles(@TempDir Path dir) throws IOException {
    Path missing = dir.resolve("missing.properties");
    Path empty = Files.writeString(dir.resolve("empty.properties"), "ttl=3s\n");

    assertThatThrownBy(
            () ->
                ConfiguredNodes.find(
                    Map.of("REDLOCK_CONFIG", missing.toString()), new Properties()))
        .isInstanceOf(RedlockNonTransientException.class)
        .hasMessageContaining("missing.properties")
        .hasMessageContaining("named by environment variable REDLOCK_CONFIG")
        .hasMessageContaining("does not exist");
    assertThatThrownBy(() -> ConfiguredNodes.fromFile(empty, "--config"))
        .hasMessageContaining("has no 'nodes' entry; add one, e.g. nodes=redis://");
  }

  @Test
  @DisplayName("the description of configured nodes leaves the URIs (and passwords) out")
  void configuredToStringHidesUris() {
    ConfiguredNodes c = new ConfiguredNodes(List.of("redis://:s3cret@a"), "environment variable X");

    assertThat(c.toString()).doesNotContain("s3cret").contains("1 node URIs");
  }

  @Test
  @DisplayName("a variable set but empty is an error, not the default")
  void setButBlankIsAnError() {
    assertThatThrownBy(() -> ConfiguredNodes.find(Map.of("REDLOCK_NODES", "  "), new Properties()))
        .isInstanceOf(RedlockNonTransientException.class)
        .hasMessageContaining("environment variable REDLOCK_NODES is set but empty")
        .hasMessageContaining("or unset it");
    Properties props = new Properties();
    props.setProperty("redlock.config", "");
    assertThatThrownBy(() -> ConfiguredNodes.find(Map.of(), props))
        .hasMessageContaining("system property redlock.config is set but empty");
  }
}
