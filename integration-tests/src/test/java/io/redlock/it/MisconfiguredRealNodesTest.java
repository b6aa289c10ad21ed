package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.NodesMisconfiguredException;
import io.redlock.Redlock;
import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * One meaning of "misconfigured" on real servers: an unknown host, and a PostgreSQL asked for TLS
 * that has none, next to healthy Redis nodes. By default the library refuses them, as the CLI does;
 * {@code strictNodes(false)} lets the others outvote them.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("Misconfigured nodes next to real servers")
class MisconfiguredRealNodesTest {
  private static RedisServers redis;

  @BeforeAll
  static void start() {
    redis = RedisServers.start(2);
  }

  @AfterAll
  static void stop() {
    redis.close();
  }

  private static void assertRefusedThenOutvoted(String badUri, String... words) {
    List<String> uris = new ArrayList<>(redis.uris());
    uris.add(badUri);
    assertThatThrownBy(
            () -> {
              try (Redlock redlock =
                  Redlock.builder().nodeUris(uris).nodeTimeout(Duration.ofMillis(500)).build()) {
                redlock.tryAcquire("misconfigured", Duration.ofSeconds(5));
              }
            })
        .isInstanceOf(NodesMisconfiguredException.class)
        .hasMessageContaining(words[0])
        .satisfies(e -> assertThat(e.getMessage()).contains(List.of(words)));
    try (Redlock lenient =
        Redlock.builder()
            .nodeUris(uris)
            .nodeTimeout(Duration.ofMillis(500))
            .strictNodes(false)
            .build()) {
      try (io.redlock.Lease lease =
          lenient.acquire("misconfigured", Duration.ofSeconds(5), Duration.ofSeconds(5))) {
        assertThat(lease.failedNodes()).hasSize(1);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }
  }

  @Test
  @DisplayName(
      "an unknown host fails build or acquire, naming the host; strictNodes(false) outvotes it")
  void unknownHost() {
    assertRefusedThenOutvoted("redis://no-such-host.invalid:6379", "unknown host", "no-such-host");
  }

  @Test
  @DisplayName("sslmode=verify-full against a PostgreSQL without TLS is misconfigured, not slow")
  void tlsRefused() {
    try (PostgresServer pg = PostgresServer.startLocal()) {
      String uri =
          pg.uri().replace("sslmode=disable", "sslmode=verify-full") + "&redlock.createTable=true";
      assertRefusedThenOutvoted(uri, "TLS");
    }
  }
}
