package io.redlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.RedlockNonTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.NodeStatus;
import io.redlock.testservers.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Jedis;

/**
 * What the compatibility kit cannot see of fencing and status on Redis: how the keys are stored,
 * the time floor of the counter, and durability and permissions as the server reports them.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("RedisLockNode fencing counters and status on a real redis-server")
class RedisFencingAndStatusTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(5);

  private final List<AutoCloseable> closing = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : closing) {
      c.close();
    }
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    closing.add(c);
    return c;
  }

  private static String key() {
    return "fence-test:" + UUID.randomUUID();
  }

  private static String token() {
    return UUID.randomUUID().toString();
  }

  private static long serverMicros(Jedis plain) {
    List<String> time = plain.time();
    return Long.parseLong(time.get(0)) * 1_000_000L + Long.parseLong(time.get(1));
  }

  @Test
  @DisplayName(
      "a fenced acquire stores the lock key as a plain acquire does, the counter beside it")
  void keysAsStored() {
    RedisLockNode node =
        closeLater(RedisLockNode.fromUri(SharedRedis.server().uri() + "?keyPrefix=app:"));
    Jedis plain = closeLater(SharedRedis.plainClient());
    String key = key();
    String token = token();

    AcquireResult result = node.tryAcquireFenced(key, token, TTL).await(WAIT);

    assertThat(result.acquired()).isTrue();
    assertThat(plain.type("app:" + key)).isEqualTo("string");
    assertThat(plain.get("app:" + key)).isEqualTo(token);
    assertThat(plain.pttl("app:" + key)).isBetween(1L, TTL.toMillis());
    assertThat(node.fenceKey(key)).isEqualTo("app:{fence}:" + key);
    assertThat(plain.get(node.fenceKey(key))).isEqualTo(Long.toString(result.fence()));
    assertThat(plain.pttl(node.fenceKey(key))).as("the counter has no expiry").isEqualTo(-1L);
    assertThat(node.release(key, token).await(WAIT)).isTrue();
    assertThat(plain.exists(node.fenceKey(key))).as("the counter survives release").isTrue();
  }

  @Test
  @DisplayName("a counter starts from the server's time in µs, also after it was lost")
  void counterFloorIsServerTime() {
    RedisLockNode node = closeLater(RedisLockNode.fromUri(SharedRedis.server().uri()));
    Jedis plain = closeLater(SharedRedis.plainClient());
    String key = key();

    long before = serverMicros(plain);
    String first = token();
    long f1 = node.tryAcquireFenced(key, first, TTL).await(WAIT).fence();
    assertThat(f1).as("first fence vs the server's time before it").isGreaterThan(before);
    node.release(key, first).await(WAIT);

    plain.del(node.fenceKey(key)); // as a restart without persistence or an eviction would
    long f2 = node.tryAcquireFenced(key, token(), TTL).await(WAIT).fence();
    assertThat(f2).as("fence after the counter was lost").isGreaterThan(f1);
  }

  @Test
  @DisplayName("a plain acquire does not touch the counter")
  void plainAcquireLeavesCounter() {
    RedisLockNode node = closeLater(RedisLockNode.fromUri(SharedRedis.server().uri()));
    Jedis plain = closeLater(SharedRedis.plainClient());
    String key = key();

    assertThat(node.tryAcquire(key, token(), TTL).await(WAIT).acquired()).isTrue();

    assertThat(plain.exists(node.fenceKey(key))).isFalse();
  }

  @Test
  @DisplayName("a server without persistence reports itself not durable, with its run_id")
  void notDurable() {
    RedisLockNode node = closeLater(RedisLockNode.fromUri(SharedRedis.server().uri()));
    Jedis plain = closeLater(SharedRedis.plainClient());

    NodeStatus status = node.status().await(WAIT);

    assertThat(status.durable()).isFalse();
    assertThat(status.incarnation())
        .isEqualTo(
            plain
                .info("server")
                .lines()
                .filter(l -> l.startsWith("run_id:"))
                .findFirst()
                .orElseThrow()
                .substring(7)
                .strip());
    assertThat(status.details())
        .containsEntry("aof_enabled", "0")
        .containsKeys("redis_version", "appendfsync", "maxmemory_policy");
  }

  @Test
  @DisplayName("AOF with appendfsync always is durable; AOF with everysec is not")
  void durableOnlyWithFsyncAlways() {
    RedisServer always = closeLater(RedisServer.builder().appendOnly().start());
    RedisServer everysec =
        closeLater(
            RedisServer.builder()
                .extraArgs("--appendonly", "yes", "--appendfsync", "everysec")
                .start());

    NodeStatus durable = closeLater(RedisLockNode.fromUri(always.uri())).status().await(WAIT);
    NodeStatus notDurable = closeLater(RedisLockNode.fromUri(everysec.uri())).status().await(WAIT);

    assertThat(durable.durable()).isTrue();
    assertThat(durable.details()).containsEntry("appendfsync", "always");
    assertThat(notDurable.durable()).isFalse();
    assertThat(notDurable.details()).containsEntry("appendfsync", "everysec");
  }

  @Test
  @DisplayName(
      "a user who may not run CONFIG is treated as not durable; one who may not run INFO"
          + " gets a status failure that says so")
  void permissions() {
    RedisServer server = closeLater(RedisServer.builder().appendOnly().start());
    assertThat(server.command("ACL", "SETUSER", "noconfig", "on", ">pw1", "~*", "+@all", "-config"))
        .isEqualTo("+OK");
    assertThat(server.command("ACL", "SETUSER", "noinfo", "on", ">pw2", "~*", "+@all", "-info"))
        .isEqualTo("+OK");
    String hostPort = server.host() + ":" + server.port();

    NodeStatus noConfig =
        closeLater(RedisLockNode.fromUri("redis://noconfig:pw1@" + hostPort)).status().await(WAIT);
    RedisLockNode noInfo = closeLater(RedisLockNode.fromUri("redis://noinfo:pw2@" + hostPort));

    assertThat(noConfig.durable()).as("AOF always, but the policy cannot be read").isFalse();
    assertThat(noConfig.details().get("appendfsync")).startsWith("unknown");
    assertThatThrownBy(() -> noInfo.status().await(WAIT))
        .isInstanceOf(RedlockNonTransientException.class)
        .hasMessageContaining("NOPERM")
        .hasMessageNotContaining("pw2");
    String key = key();
    assertThat(noInfo.tryAcquire(key, token(), TTL).await(WAIT).acquired())
        .as("locks still work for a user without INFO")
        .isTrue();
  }

  @Test
  @DisplayName("a status failure is not cached: once INFO is allowed, the next status() succeeds")
  void statusRecoversAfterAFailure() {
    RedisServer server = closeLater(RedisServer.builder().start());
    assertThat(server.command("ACL", "SETUSER", "later", "on", ">pw3", "~*", "+@all", "-info"))
        .isEqualTo("+OK");
    RedisLockNode node =
        closeLater(
            RedisLockNode.fromUri("redis://later:pw3@" + server.host() + ":" + server.port()));
    // Keep one pooled connection busy-free and reused, so no new connection refreshes the cache.
    assertThat(node.tryAcquire(key(), token(), TTL).await(WAIT).acquired()).isTrue();
    assertThatThrownBy(() -> node.status().await(WAIT)).hasMessageContaining("NOPERM");

    assertThat(server.command("ACL", "SETUSER", "later", "+info")).isEqualTo("+OK");

    NodeStatus status = node.status().await(WAIT);
    assertThat(status.incarnation()).isNotBlank();
  }

  @Test
  @DisplayName("a lock name in the fencing counters' namespace is refused, naming the problem")
  void fenceNamespaceIsNotALockName() {
    RedisLockNode node = closeLater(RedisLockNode.fromUri(SharedRedis.server().uri()));
    String taken = "{fence}:" + key();
    assertThatThrownBy(() -> node.tryAcquire(taken, token(), TTL))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("{fence}:")
        .hasMessageContaining("choose another lock name");
    assertThatThrownBy(() -> node.tryAcquireFenced(taken, token(), TTL))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> node.release(taken, token()))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  @DisplayName("a node notices a restart on its next new connection and reports a young server")
  void restartNoticed() throws Exception {
    RedisServer server = closeLater(RedisServer.builder().faultInjection().start());
    RedisLockNode node = closeLater(RedisLockNode.fromUri(server.uri()));
    NodeStatus before = node.status().await(WAIT);

    server.kill();
    server.restart();
    // the first call after the restart may fail on a connection the restart broke
    boolean answered = false;
    for (int i = 0; i < 20 && !answered; i++) {
      try {
        node.tryAcquire(key(), token(), TTL).await(WAIT);
        answered = true;
      } catch (RuntimeException e) {
        Thread.sleep(50);
      }
    }
    assertThat(answered).isTrue();
    NodeStatus after = node.status().await(WAIT);

    assertThat(after.incarnation()).isNotEqualTo(before.incarnation());
    assertThat(after.uptime()).isLessThan(Duration.ofSeconds(5));
    assertThat(after.durable()).isFalse();
  }
}
