package io.redlock.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.Redlock;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The listener's meters, on a quorum of 3 real Redis servers that all stay up. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("RedlockMetrics on 3 Redis nodes")
class RedlockMetricsTest {
  private static final Duration TTL = Duration.ofSeconds(5);
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

  private static Redlock redlock(RedlockMetrics metrics) {
    return Redlock.builder()
        .nodeUris(redis.uris())
        .nodeTimeout(Duration.ofMillis(500)) // generous for a busy 2-core machine
        .retry(2, Duration.ofMillis(5), Duration.ofMillis(10))
        .listener(metrics)
        .build();
  }

  private static String resource() {
    return "metrics-" + UUID.randomUUID();
  }

  @Test
  @DisplayName("an acquisition and its release are timed, counted and held in between")
  void acquisitionAndRelease() {
    MeterRegistry registry = new SimpleMeterRegistry();
    try (Redlock redlock = redlock(RedlockMetrics.of(registry))) {
      assertThat(registry.get(RedlockMetrics.HELD).gauge().value()).isZero();
      Lease lease = redlock.tryAcquire(resource(), TTL).orElseThrow();

      assertThat(
              registry.get(RedlockMetrics.ACQUISITIONS).tag("result", "acquired").timer().count())
          .isOne();
      assertThat(registry.get(RedlockMetrics.ATTEMPTS).tag("result", "acquired").summary().count())
          .isOne();
      assertThat(
              registry
                  .get(RedlockMetrics.ATTEMPTS)
                  .tag("result", "acquired")
                  .summary()
                  .totalAmount())
          .isEqualTo(1.0);
      assertThat(registry.get(RedlockMetrics.HELD).gauge().value()).isEqualTo(1.0);
      for (String node : redlock.nodes()) {
        assertThat(
                registry
                    .get(RedlockMetrics.NODE_CALLS)
                    .tags("node", node, "operation", "tryAcquire", "outcome", "yes")
                    .timer()
                    .count())
            .as("granted calls on %s", node)
            .isOne();
      }

      lease.release();
      assertThat(registry.get(RedlockMetrics.HELD).gauge().value()).isZero();
      assertThat(registry.get(RedlockMetrics.RELEASES).tag("complete", "true").counter().count())
          .isEqualTo(1.0);
      assertThat(
              registry
                  .get(RedlockMetrics.NODE_CALLS)
                  .tags("operation", "release", "outcome", "yes")
                  .timers())
          .hasSize(3)
          .allSatisfy(t -> assertThat(t.count()).isOne());
      assertThat(
              registry
                  .get(RedlockMetrics.ACQUISITIONS)
                  .tag("result", "acquired")
                  .timer()
                  .totalTime(TimeUnit.NANOSECONDS))
          .isPositive();
    }
  }

  @Test
  @DisplayName(
      "a contended acquisition counts as not acquired, with its attempts and the nodes' no")
  void contended() {
    MeterRegistry registry = new SimpleMeterRegistry();
    String resource = resource();
    try (Redlock holder = redlock(RedlockMetrics.of(new SimpleMeterRegistry()));
        Redlock other = redlock(RedlockMetrics.of(registry));
        Lease held = holder.tryAcquire(resource, TTL).orElseThrow()) {
      assertThat(other.tryAcquire(resource, TTL)).isEmpty();

      assertThat(
              registry
                  .get(RedlockMetrics.ACQUISITIONS)
                  .tag("result", "not_acquired")
                  .timer()
                  .count())
          .isOne();
      assertThat(
              registry
                  .get(RedlockMetrics.ATTEMPTS)
                  .tag("result", "not_acquired")
                  .summary()
                  .totalAmount())
          .as("both configured attempts")
          .isEqualTo(2.0);
      assertThat(
              registry
                  .get(RedlockMetrics.NODE_CALLS)
                  .tags("operation", "tryAcquire", "outcome", "no")
                  .timers())
          .hasSize(3)
          .allSatisfy(t -> assertThat(t.count()).isEqualTo(2));
      assertThat(registry.get(RedlockMetrics.HELD).gauge().value()).isZero();
      assertThat(held.isValid()).isTrue();
    }
  }

  @Test
  @DisplayName("extensions by hand and by keep-alive are counted")
  void extensions() throws Exception {
    MeterRegistry registry = new SimpleMeterRegistry();
    try (Redlock redlock = redlock(RedlockMetrics.of(registry));
        Lease lease = redlock.tryAcquire(resource(), TTL).orElseThrow()) {
      assertThat(lease.extend(TTL)).isTrue();
      assertThat(
              registry.get(RedlockMetrics.EXTENSIONS).tag("result", "extended").counter().count())
          .isEqualTo(1.0);

      lease.keepAlive(KeepAlive.defaults().every(Duration.ofMillis(50)));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (lease.extensions() < 3 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(lease.extensions()).isGreaterThanOrEqualTo(3);
      assertThat(
              registry.get(RedlockMetrics.EXTENSIONS).tag("result", "extended").counter().count())
          .isGreaterThanOrEqualTo(3.0);
      assertThat(registry.get(RedlockMetrics.EXTENSIONS).tag("result", "failed").counter().count())
          .isZero();
    }
  }

  @Test
  @DisplayName("a kept-alive lease whose key disappears from every node is counted as lost")
  void lost() throws Exception {
    MeterRegistry registry = new SimpleMeterRegistry();
    String resource = resource();
    try (Redlock redlock = redlock(RedlockMetrics.of(registry))) {
      Lease lease = redlock.tryAcquire(resource, TTL).orElseThrow();
      lease.keepAlive(KeepAlive.defaults().every(Duration.ofMillis(50)));
      for (RedisServer server : redis) {
        server.command("DEL", resource);
      }
      LeaseLost lost = lease.whenLost().toCompletableFuture().get(10, TimeUnit.SECONDS);
      assertThat(lost.reason()).isEqualTo(LeaseLost.Reason.TOKEN_GONE);
      assertThat(registry.get(RedlockMetrics.LOST).tag("reason", "token_gone").counter().count())
          .isEqualTo(1.0);
      // the renewal reports its failed extension right after the loss
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (registry.get(RedlockMetrics.EXTENSIONS).tag("result", "failed").counter().count() < 1
          && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertThat(registry.get(RedlockMetrics.EXTENSIONS).tag("result", "failed").counter().count())
          .isGreaterThanOrEqualTo(1.0);
      assertThat(registry.get(RedlockMetrics.HELD).gauge().value())
          .as("lost but not yet released")
          .isEqualTo(1.0);
      lease.release();
      assertThat(registry.get(RedlockMetrics.HELD).gauge().value()).isZero();
    }
  }

  @Test
  @DisplayName("no meter carries the resource unless resource tags are on; then they all do")
  void resourceTags() {
    MeterRegistry plain = new SimpleMeterRegistry();
    MeterRegistry tagged = new SimpleMeterRegistry();
    String resource = resource();
    try (Redlock a = redlock(RedlockMetrics.of(plain));
        Redlock b = redlock(RedlockMetrics.builder(tagged).resourceTags(true).build())) {
      a.tryAcquire(resource, TTL).orElseThrow().release();
      b.tryAcquire(resource, TTL).orElseThrow().release();
    }
    assertThat(plain.getMeters())
        .isNotEmpty()
        .allSatisfy(m -> assertThat(m.getId().getTag("resource")).isNull());
    assertThat(
            tagged.getMeters().stream()
                .filter(m -> !m.getId().getName().equals(RedlockMetrics.NODE_CALLS)))
        .isNotEmpty()
        .allSatisfy(m -> assertThat(m.getId().getTag("resource")).isEqualTo(resource));
    assertThat(tagged.get(RedlockMetrics.HELD).tag("resource", resource).gauge().value()).isZero();
    assertThat(
            tagged
                .get(RedlockMetrics.ACQUISITIONS)
                .tags("resource", resource, "result", "acquired")
                .timer()
                .count())
        .isOne();
  }

  @Test
  @DisplayName("common tags are on every meter, node gauges included")
  void commonTags() {
    MeterRegistry registry = new SimpleMeterRegistry();
    try (Redlock redlock =
        redlock(RedlockMetrics.builder(registry).tags("redlock", "billing").build())) {
      new RedlockNodeMetrics(redlock, java.util.List.of(Tag.of("redlock", "billing")))
          .bindTo(registry);
      redlock.tryAcquire(resource(), TTL).orElseThrow().release();
    }
    assertThat(registry.getMeters())
        .extracting(Meter::getId)
        .isNotEmpty()
        .allSatisfy(id -> assertThat(id.getTag("redlock")).isEqualTo("billing"));
  }

  @Test
  @DisplayName("node gauges show every node up and the quorum up once the nodes answered")
  void nodeGaugesWhenAllUp() {
    MeterRegistry registry = new SimpleMeterRegistry();
    try (Redlock redlock = redlock(RedlockMetrics.of(registry))) {
      new RedlockNodeMetrics(redlock).bindTo(registry);
      // one state gauge per node and state, exactly one of them 1 for each node
      assertThat(registry.get(RedlockNodeMetrics.STATE).gauges()).hasSize(9);
      for (String node : redlock.nodes()) {
        assertThat(
                registry.get(RedlockNodeMetrics.STATE).tag("node", node).gauges().stream()
                    .mapToDouble(g -> g.value())
                    .sum())
            .isEqualTo(1.0);
      }

      Optional<Lease> lease = redlock.tryAcquire(resource(), TTL);
      lease.orElseThrow().release();

      assertThat(registry.get(RedlockNodeMetrics.QUORUM).gauge().value()).isEqualTo(1.0);
      assertThat(registry.get(RedlockNodeMetrics.STATE).tag("state", "up").gauges())
          .hasSize(3)
          .allSatisfy(g -> assertThat(g.value()).isEqualTo(1.0));
      assertThat(registry.get(RedlockNodeMetrics.STATE).tag("state", "down").gauges())
          .allSatisfy(g -> assertThat(g.value()).isZero());
      assertThat(registry.get(RedlockNodeMetrics.IN_FLIGHT).gauges())
          .hasSize(3)
          .allSatisfy(g -> assertThat(g.value()).isZero());
      assertThat(registry.getMeters())
          .allSatisfy(
              m -> assertThat(String.valueOf(m.getId().getTag("node"))).doesNotContain("password"));
    }
  }
}
