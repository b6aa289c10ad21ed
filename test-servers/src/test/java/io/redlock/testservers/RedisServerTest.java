package io.redlock.testservers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("RedisServer")
class RedisServerTest {

  @Test
  @DisplayName("a started server answers PING and stores values")
  void startedServerAnswers() {
    try (RedisServer redis = RedisServer.start()) {
      String key = "k-" + UUID.randomUUID();
      assertThat(redis.ping()).isTrue();
      assertThat(redis.command("SET", key, "värde")).isEqualTo("+OK");
      assertThat(redis.command("GET", key)).isEqualTo("värde");
      assertThat(redis.command("GET", key + "-absent")).isNull();
      assertThat(redis.uri()).startsWith("redis://").endsWith(":" + redis.port());
    }
  }

  @Test
  @DisplayName("a password-protected server refuses clients without the password")
  void passwordIsRequired() throws Exception {
    try (RedisServer redis = RedisServer.builder().password("p@ss word").start()) {
      assertThat(redis.ping()).isTrue();
      assertThat(redis.uri()).contains(":p%40ss%20word@");
      assertThat(redis.toString()).doesNotContain("p@ss");
      assertThat(
              RedisServer.probe(
                  redis.host(), redis.port(), null, false, java.time.Duration.ofSeconds(2)))
          .startsWith("-NOAUTH");
    }
  }

  @Test
  @DisplayName("kill stops answering and restart brings an empty server back on the same port")
  void killAndRestart() {
    try (RedisServer redis = RedisServer.builder().faultInjection().start()) {
      redis.command("SET", "k", "v");
      int port = redis.port();
      redis.kill();
      assertThat(redis.isRunning()).isFalse();
      assertThat(redis.ping()).isFalse();
      redis.restart();
      assertThat(redis.port()).isEqualTo(port);
      assertThat(redis.ping()).isTrue();
      assertThat(redis.command("GET", "k")).as("no persistence by default").isNull();
    }
  }

  @Test
  @DisplayName("with an append-only file, data survives kill and restart")
  void appendOnlySurvivesRestart() {
    try (RedisServer redis = RedisServer.builder().appendOnly().faultInjection().start()) {
      redis.command("SET", "k", "v", "PX", "60000");
      redis.kill();
      redis.restart();
      assertThat(redis.command("GET", "k")).isEqualTo("v");
    }
  }

  @Test
  @DisplayName("a paused server does not answer until resumed")
  void pauseAndResume() {
    try (RedisServer redis = RedisServer.builder().faultInjection().start()) {
      redis.pause();
      assertThat(redis.ping()).isFalse();
      redis.resume();
      assertThat(redis.ping()).isTrue();
    }
  }

  @Test
  @DisplayName("the binary bundled in embedded-redis can be used instead of the one on the PATH")
  void bundledBinary() {
    try (RedisServer redis = RedisServer.builder().bundledBinary().start()) {
      assertThat(redis.ping()).isTrue();
      assertThat(redis.toString()).contains("redis-server-");
      assertThat(redis.command("INFO", "server")).contains("redis_version:6.");
    }
  }

  @Test
  @DisplayName(
      "a group of servers has distinct ports and close stops them all and deletes their files")
  void group() {
    RedisServers group = RedisServers.start(3, RedisServer.builder().faultInjection());
    Set<Integer> ports = new HashSet<>();
    List<java.nio.file.Path> dirs = new ArrayList<>();
    try (group) {
      assertThat(group.size()).isEqualTo(3);
      for (RedisServer server : group) {
        assertThat(server.ping()).isTrue();
        ports.add(server.port());
        dirs.add(server.workDir().orElseThrow());
      }
      assertThat(ports).hasSize(3);
      assertThat(group.uris()).hasSize(3);
      assertThat(dirs).allSatisfy(dir -> assertThat(dir).isDirectory());
    }
    assertThat(group.list()).allSatisfy(s -> assertThat(s.isRunning()).isFalse());
    assertThat(dirs).allSatisfy(dir -> assertThat(dir).doesNotExist());
  }

  @Test
  @DisplayName("servers given in the environment are parsed and cannot be killed")
  void externalAddresses() {
    RedisServer external = RedisServer.external("10.0.0.5:6390");
    assertThat(external.host()).isEqualTo("10.0.0.5");
    assertThat(external.port()).isEqualTo(6390);
    assertThat(external.source()).isEqualTo(RedisServer.Source.ENVIRONMENT);
    assertThatThrownBy(external::kill)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("faultInjection()");
    assertThatThrownBy(() -> RedisServer.external("nohost"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("host:port");
  }
}
