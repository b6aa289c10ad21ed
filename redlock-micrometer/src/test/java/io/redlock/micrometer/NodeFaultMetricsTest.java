package io.redlock.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Outcomes and node gauges when real Redis nodes fail: killed, or frozen. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("RedlockMetrics when nodes fail")
class NodeFaultMetricsTest {
  private static final Duration TTL = Duration.ofSeconds(5);

  @Test
  @DisplayName(
      "a killed node's calls count as failed, it shows down, and with two of three down the"
          + " quorum shows down")
  void killedNodes() throws Exception {
    try (RedisServers redis = RedisServers.start(3, RedisServer.builder().faultInjection())) {
      MeterRegistry registry = new SimpleMeterRegistry();
      try (Redlock redlock =
          Redlock.builder()
              .nodeUris(redis.uris())
              .nodeTimeout(Duration.ofMillis(500))
              .retry(1, Duration.ZERO, Duration.ZERO)
              .listener(RedlockMetrics.of(registry))
              .build()) {
        new RedlockNodeMetrics(redlock).bindTo(registry);
        String down = redlock.nodes().get(0);
        redlock.tryAcquire("warm-up", TTL).orElseThrow().release();
        redis.get(0).kill();
        Thread.sleep(1_100); // a node that answered within the last second is slow, not down

        Lease lease = null;
        for (int i = 0; i < 3; i++) { // three failed calls in a row make a node down
          lease = redlock.tryAcquire("fault-" + UUID.randomUUID(), TTL).orElseThrow();
          lease.release();
        }
        assertThat(
                registry
                    .get(RedlockMetrics.NODE_CALLS)
                    .tags("node", down, "operation", "tryAcquire", "outcome", "failed")
                    .timer()
                    .count())
            .as("failed calls (once down, a node's calls are awaited only as probes)")
            .isGreaterThanOrEqualTo(2);
        assertThat(registry.get(RedlockMetrics.RELEASES).tag("complete", "false").counter().count())
            .as("releases that could not reach the killed node")
            .isEqualTo(3.0);
        assertThat(registry.get(RedlockNodeMetrics.STATE).tags("node", down, "state", "down"))
            .satisfies(s -> assertThat(s.gauge().value()).isEqualTo(1.0));
        assertThat(registry.get(RedlockNodeMetrics.QUORUM).gauge().value())
            .as("two of three still up")
            .isEqualTo(1.0);

        redis.get(1).kill();
        Thread.sleep(1_100);
        for (int i = 0; i < 3; i++) {
          assertThat(redlock.tryAcquire("fault-" + UUID.randomUUID(), TTL)).isEmpty();
        }
        assertThat(registry.get(RedlockNodeMetrics.QUORUM).gauge().value()).isZero();
        assertThat(
                registry
                    .get(RedlockMetrics.ACQUISITIONS)
                    .tag("result", "not_acquired")
                    .timer()
                    .count())
            .isEqualTo(3);
      }
    }
  }

  @Test
  @DisplayName("a frozen node's calls count as timed out, and its calls in flight show")
  void frozenNode() throws Exception {
    try (RedisServers redis = RedisServers.start(3, RedisServer.builder().faultInjection())) {
      MeterRegistry registry = new SimpleMeterRegistry();
      try (Redlock redlock =
          Redlock.builder()
              .nodeUris(redis.uris())
              .nodeTimeout(Duration.ofMillis(200))
              .retry(1, Duration.ZERO, Duration.ZERO)
              .listener(RedlockMetrics.of(registry))
              .build()) {
        new RedlockNodeMetrics(redlock).bindTo(registry);
        String frozen = redlock.nodes().get(2);
        redlock.tryAcquire("warm-up", TTL).orElseThrow().release();
        redis.get(2).pause();
        try {
          Lease lease = redlock.tryAcquire("frozen-" + UUID.randomUUID(), TTL).orElseThrow();
          assertThat(
                  registry
                      .get(RedlockMetrics.NODE_CALLS)
                      .tags("node", frozen, "operation", "tryAcquire", "outcome", "timed_out")
                      .timer()
                      .count())
              .isOne();
          assertThat(
                  registry
                      .get(RedlockMetrics.NODE_CALLS)
                      .tags("node", frozen, "operation", "tryAcquire", "outcome", "timed_out")
                      .timer()
                      .max(TimeUnit.MILLISECONDS))
              .isGreaterThanOrEqualTo(150);
          lease.release();
          // A call to the frozen node shows in flight while it waits for its answer.
          var second =
              java.util.concurrent.CompletableFuture.supplyAsync(
                  () -> redlock.tryAcquire("frozen-" + UUID.randomUUID(), TTL));
          double inFlight = 0;
          while (inFlight < 1 && !second.isDone()) {
            inFlight =
                registry.get(RedlockNodeMetrics.IN_FLIGHT).tag("node", frozen).gauge().value();
            Thread.sleep(1);
          }
          assertThat(inFlight).as("the frozen node's call in flight").isGreaterThanOrEqualTo(1.0);
          second.get(30, TimeUnit.SECONDS).orElseThrow().release();
        } finally {
          redis.get(2).resume();
        }
      }
    }
  }
}
