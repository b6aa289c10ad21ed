package io.redlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.testservers.RedisServer;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import redis.clients.jedis.Jedis;

/**
 * {@code serverTime()} is the Redis server's own clock ({@code TIME}), not this machine's: on the
 * shared test server it agrees with {@code TIME} as a plain client reads it, and on a server whose
 * clock libfaketime moved it shows that move.
 */
@Timeout(120)
@DisplayName("RedisLockNode.serverTime() reads the server's clock")
class RedisServerTimeTest {
  private static final Duration AWAIT = Duration.ofSeconds(10);

  private static Instant time(Jedis plain) {
    List<String> parts = plain.time();
    return Instant.ofEpochSecond(Long.parseLong(parts.get(0)), Long.parseLong(parts.get(1)) * 1000);
  }

  @Test
  @DisplayName("lies between two TIME reads of a plain client, to the microsecond")
  void agreesWithTime() {
    try (Jedis plain = SharedRedis.plainClient();
        RedisLockNode node = RedisLockNode.fromUri(SharedRedis.server().uri())) {
      node.serverTime().await(AWAIT); // the first call opens a connection
      for (int i = 0; i < 3; i++) {
        Instant before = time(plain);
        Instant server = node.serverTime().await(AWAIT);
        Instant after = time(plain);
        assertThat(server).isBetween(before, after);
      }
      assertThat(node.activeConnections()).as("the connection went back to the pool").isZero();
    }
  }

  @ParameterizedTest(name = "server clock {0} s from this machine's")
  @ValueSource(longs = {30, -45})
  @DisplayName("shows the offset of a server whose clock libfaketime moved")
  void showsMovedClock(long offsetSeconds) {
    Assumptions.assumeTrue(
        RedisServer.canMoveClock(),
        "needs libfaketime (apt-get install -y libfaketime) to move the server's clock");
    try (RedisServer moved =
            RedisServer.builder().clockOffset(Duration.ofSeconds(offsetSeconds)).start();
        RedisLockNode node = RedisLockNode.fromUri(moved.uri())) {
      Instant before = Instant.now();
      Instant server = node.serverTime().await(AWAIT);
      Instant after = Instant.now();
      Duration offset =
          Duration.between(before.plus(Duration.between(before, after).dividedBy(2)), server);
      assertThat(offset)
          .as("server %s read between %s and %s on this machine", server, before, after)
          .isBetween(
              Duration.ofSeconds(offsetSeconds).minusSeconds(3),
              Duration.ofSeconds(offsetSeconds).plusSeconds(3));
    }
  }
}
