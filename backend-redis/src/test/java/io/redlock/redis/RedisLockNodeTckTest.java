package io.redlock.redis;

import io.redlock.spi.LockNode;
import io.redlock.tck.KeyInspector;
import io.redlock.tck.LockNodeCompatibilityKit;
import io.redlock.testservers.FreePorts;
import io.redlock.testservers.RedisServer;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import redis.clients.jedis.Jedis;

/**
 * The whole compatibility kit against a real redis-server that requires a password, so that the kit
 * also checks that the password never shows.
 */
@DisplayName("TCK: RedisLockNode")
class RedisLockNodeTckTest extends LockNodeCompatibilityKit {
  private static final String PASSWORD = "tck-S3cret-pw";
  private static RedisServer redis;

  @BeforeAll
  static void startServer() {
    // a local process, so that R12.11 and R13.3 can crash and restart it
    redis = RedisServer.builder().password(PASSWORD).faultInjection().start();
  }

  @AfterAll
  static void stopServer() {
    if (redis != null) {
      redis.close();
    }
  }

  @Override
  protected LockNode createNode() {
    return RedisLockNode.fromUri(redis.uri() + "?keyPrefix=tck:");
  }

  @Override
  protected Optional<KeyInspector> keyInspector() {
    Jedis plain = SharedRedis.plainClient(redis, 0);
    return Optional.of(
        new KeyInspector() {
          @Override
          public Optional<KeyState> inspect(String key) {
            String stored = "tck:" + key;
            // PTTL first: if the key expires between the two reads, GET finds nothing
            long pttl = plain.pttl(stored);
            String owner = plain.get(stored);
            if (owner == null || pttl == -2) {
              return Optional.empty();
            }
            return Optional.of(new KeyState(owner, Duration.ofMillis(Math.max(0, pttl))));
          }

          @Override
          public void close() {
            plain.close();
          }
        });
  }

  @Override
  protected Optional<LockNode> createUnreachableNode() {
    return Optional.of(
        RedisLockNode.fromUri(
            "redis://:" + PASSWORD + "@127.0.0.1:" + FreePorts.find() + "?keyPrefix=tck:"));
  }

  @Override
  protected Optional<String> configuredSecret() {
    return Optional.of(PASSWORD);
  }

  /** A crash ({@code kill -9}) and a restart without persistence, on the same port. */
  @Override
  protected boolean restartStore() {
    redis.kill();
    redis.restart();
    return true;
  }

  @Override
  protected Duration failureBound() {
    return Duration.ofSeconds(5); // connectTimeout (1 s) plus a margin for a busy machine
  }
}
