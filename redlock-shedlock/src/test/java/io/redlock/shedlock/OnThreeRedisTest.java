package io.redlock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Redlock;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.List;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** ShedLock's provider contract on a quorum of 3 real Redis servers. */
@DisplayName("RedlockLockProvider on 3 Redis")
class OnThreeRedisTest extends LockProviderContract {
  private static RedisServers redis;

  @BeforeAll
  static void startServers() {
    redis = RedisServers.start(3);
  }

  @AfterAll
  static void stopServers() {
    if (redis != null) {
      redis.close();
    }
  }

  @Override
  List<String> nodeUris() {
    return redis.uris();
  }

  @Test
  @DisplayName("the lock lives on every node under the prefixed name, and is gone after unlock")
  void prefixedKey() {
    SimpleLock lock = a.lock(config(name)).orElseThrow();
    for (RedisServer server : redis) {
      assertThat(server.command("GET", RedlockLockProvider.DEFAULT_PREFIX + name)).isNotNull();
    }
    lock.unlock();
    for (RedisServer server : redis) {
      assertThat(server.command("GET", RedlockLockProvider.DEFAULT_PREFIX + name)).isNull();
    }
  }

  @Test
  @DisplayName("another prefix keeps two applications' tasks of one name apart")
  void otherPrefix() {
    try (Redlock other = redlock()) {
      RedlockLockProvider billing = new RedlockLockProvider(other, "billing:");
      SimpleLock mine = a.lock(config(name)).orElseThrow();
      SimpleLock theirs = billing.lock(config(name)).orElseThrow();
      assertThat(redis.get(0).command("GET", "billing:" + name)).isNotNull();
      theirs.unlock();
      mine.unlock();
    }
  }

  @Test
  @DisplayName("with too few nodes to decide, lock throws LockException rather than skip silently")
  void quorumUnreachable() {
    try (RedisServers own = RedisServers.start(3, RedisServer.builder().faultInjection())) {
      own.get(0).kill();
      own.get(1).kill();
      try (Redlock redlock =
          Redlock.builder()
              .nodeUris(own.uris())
              .nodeTimeout(Duration.ofMillis(300))
              .retry(2, Duration.ofMillis(5), Duration.ofMillis(10))
              .build()) {
        RedlockLockProvider provider = new RedlockLockProvider(redlock);
        assertThatThrownBy(() -> provider.lock(config(name)))
            .isInstanceOf(LockException.class)
            .hasMessageContaining(name);
      }
    }
  }
}
