package io.redlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.RedlockListener;
import io.redlock.micrometer.RedlockMetrics;
import io.redlock.micrometer.RedlockNodeMetrics;
import io.redlock.shedlock.RedlockLockProvider;
import io.redlock.spring.integration.RedlockLockRegistry;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.actuate.autoconfigure.health.HealthContributorAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.DefaultLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;

/** The auto-configuration, with Spring Boot's ApplicationContextRunner, on 3 real Redis servers. */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@DisplayName("Redlock auto-configuration on 3 Redis")
class RedlockAutoConfigurationTest {
  private static final String PASSWORD = "s3cret-" + UUID.randomUUID();
  private static RedisServers redis;

  private static final AutoConfigurations REDLOCK =
      AutoConfigurations.of(
          RedlockAutoConfiguration.class,
          RedlockMetricsAutoConfiguration.class,
          RedlockHealthContributorAutoConfiguration.class,
          RedlockShedLockAutoConfiguration.class,
          RedlockIntegrationAutoConfiguration.class);

  private static final AutoConfigurations METRICS =
      AutoConfigurations.of(
          MetricsAutoConfiguration.class,
          SimpleMetricsExportAutoConfiguration.class,
          CompositeMeterRegistryAutoConfiguration.class);

  @BeforeAll
  static void startServers() {
    redis = RedisServers.start(3, RedisServer.builder().password(PASSWORD));
  }

  @AfterAll
  static void stopServers() {
    if (redis != null) {
      redis.close();
    }
  }

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner().withConfiguration(REDLOCK);

  private static String nodes() {
    return "redlock.nodes=" + String.join(",", redis.uris());
  }

  private static String resource() {
    return "boot-" + UUID.randomUUID();
  }

  /** The shared servers as {@code counting://} nodes ({@link CountingRedisNodeProvider}). */
  private static String countingNodes() {
    return "redlock.nodes="
        + String.join(",", redis.uris().stream().map(CountingRedisNodeProvider::counting).toList());
  }

  /** The health check waits this long for the nodes' clock and status: ample on a busy machine. */
  private static final String PATIENT_NODE_CHECKS = "redlock.health.node-check-timeout=10s";

  @SuppressWarnings("unchecked")
  private static Map<String, Map<String, Object>> nodeDetails(Health health) {
    return (Map<String, Map<String, Object>>) health.getDetails().get("nodes");
  }

  @SuppressWarnings("unchecked")
  private static List<String> warnings(Health health) {
    return (List<String>) health.getDetails().getOrDefault("warnings", List.of());
  }

  @Nested
  @DisplayName("the Redlock bean")
  class RedlockBean {
    @Test
    @DisplayName("without redlock.nodes there is no Redlock and nothing that needs one")
    void noNodes() {
      runner.run(
          ctx -> {
            assertThat(ctx).hasNotFailed();
            assertThat(ctx).doesNotHaveBean(Redlock.class);
            assertThat(ctx).doesNotHaveBean(LockProvider.class);
            assertThat(ctx).doesNotHaveBean(LockRegistry.class);
            assertThat(ctx).doesNotHaveBean(HealthIndicator.class);
          });
    }

    @Test
    @DisplayName("redlock.nodes as a comma-separated list makes a Redlock over those nodes")
    void fromCommaSeparatedNodes() {
      runner
          .withPropertyValues(nodes())
          .run(
              ctx -> {
                Redlock redlock = ctx.getBean(Redlock.class);
                assertThat(redlock.nodes()).hasSize(3);
                assertThat(redlock.nodes()).noneMatch(n -> n.contains(PASSWORD));
                assertThat(redlock.quorum()).isEqualTo(2);
                Optional<Lease> lease = redlock.tryAcquire(resource(), Duration.ofSeconds(5));
                assertThat(lease).isPresent();
                lease.get().release();
              });
    }

    @Test
    @DisplayName("redlock.nodes as an indexed list (YAML style) works too")
    void fromIndexedNodes() {
      List<String> uris = redis.uris();
      runner
          .withPropertyValues(
              "redlock.nodes[0]=" + uris.get(0),
              "redlock.nodes[1]=" + uris.get(1),
              "redlock.nodes[2]=" + uris.get(2))
          .run(ctx -> assertThat(ctx.getBean(Redlock.class).nodes()).hasSize(3));
    }

    @Test
    @DisplayName("every setting is bound from redlock.*")
    void settings() {
      runner
          .withPropertyValues(
              nodes(),
              "redlock.fencing=true",
              "redlock.drift-factor=0.02",
              "redlock.drift-buffer=5ms",
              "redlock.node-timeout=300ms",
              "redlock.retry.attempts=5",
              "redlock.retry.delay-min=10ms",
              "redlock.retry.delay-max=20ms",
              "redlock.min-validity=3ms",
              "redlock.max-extensions=7",
              "redlock.restart-quarantine=1m",
              "redlock.strict-nodes=true")
          .run(
              ctx -> {
                Redlock redlock = ctx.getBean(Redlock.class);
                var s = redlock.settings();
                assertThat(s.fencing()).isTrue();
                assertThat(s.driftFactor()).isEqualTo(0.02);
                assertThat(s.driftBuffer()).isEqualTo(Duration.ofMillis(5));
                assertThat(s.nodeTimeout()).isEqualTo(Duration.ofMillis(300));
                assertThat(s.retryAttempts()).isEqualTo(5);
                assertThat(s.retryDelayMin()).isEqualTo(Duration.ofMillis(10));
                assertThat(s.retryDelayMax()).isEqualTo(Duration.ofMillis(20));
                assertThat(s.minValidity()).isEqualTo(Duration.ofMillis(3));
                assertThat(s.maxExtensions()).isEqualTo(7);
                assertThat(s.restartQuarantine()).isEqualTo(Duration.ofMinutes(1));
                assertThat(s.strictNodes()).isTrue();
              });
    }

    @Test
    @DisplayName("a bad setting fails the context with the library's message")
    void badSetting() {
      runner
          .withPropertyValues(nodes(), "redlock.drift-factor=2")
          .run(
              ctx ->
                  assertThat(ctx)
                      .getFailure()
                      .rootCause()
                      .hasMessageContaining("driftFactor must be in [0, 1)"));
    }

    @Test
    @DisplayName("the Redlock is closed when the context closes")
    void closedOnShutdown() {
      Redlock[] kept = new Redlock[1];
      runner.withPropertyValues(nodes()).run(ctx -> kept[0] = ctx.getBean(Redlock.class));
      assertThatThrownBy(() -> kept[0].tryAcquire(resource(), Duration.ofSeconds(5)))
          .isInstanceOf(IllegalStateException.class);
    }

    @Test
    @DisplayName(
        "the nodes it opens are closed when the context closes, once (by the Redlock that owns"
            + " them)")
    void nodesClosedOnceOnShutdown() {
      CountingRedisNodeProvider.OPENED.clear();
      runner
          .withPropertyValues(countingNodes())
          .run(
              ctx -> {
                assertThat(ctx).hasNotFailed();
                assertThat(CountingRedisNodeProvider.OPENED).hasSize(3);
                ctx.getBean(Redlock.class)
                    .tryAcquire(resource(), Duration.ofSeconds(5))
                    .orElseThrow()
                    .release();
                assertThat(ctx.getBean(RedlockHealthIndicator.class).health().getStatus())
                    .isEqualTo(Status.UP);
                assertThat(CountingRedisNodeProvider.OPENED)
                    .allSatisfy(n -> assertThat(n.closes).hasValue(0));
              });
      assertThat(CountingRedisNodeProvider.OPENED)
          .hasSize(3)
          .allSatisfy(n -> assertThat(n.closes).as(n.name()).hasValue(1));
    }

    @Test
    @DisplayName(
        "if a customizer or the build fails, the nodes opened for the Redlock are closed, once;"
            + " a bad setting fails before any is opened")
    void nodesClosedWhenBuildFails() {
      CountingRedisNodeProvider.OPENED.clear();
      runner
          .withPropertyValues(countingNodes())
          .withBean(
              "failingCustomizer",
              RedlockBuilderCustomizer.class,
              () ->
                  b -> {
                    throw new IllegalStateException("customizer failed");
                  })
          .run(
              ctx ->
                  assertThat(ctx)
                      .getFailure()
                      .rootCause()
                      .hasMessageContaining("customizer failed"));
      assertThat(CountingRedisNodeProvider.OPENED)
          .hasSize(3)
          .allSatisfy(n -> assertThat(n.closes).as(n.name()).hasValue(1));

      // The engine refuses a node listed twice: build() fails after the nodes were opened.
      CountingRedisNodeProvider.OPENED.clear();
      runner
          .withPropertyValues(countingNodes())
          .withBean(
              "twiceCustomizer",
              RedlockBuilderCustomizer.class,
              () -> b -> b.nodes(CountingRedisNodeProvider.OPENED.get(0)))
          .run(
              ctx -> assertThat(ctx).getFailure().rootCause().hasMessageContaining("listed twice"));
      assertThat(CountingRedisNodeProvider.OPENED)
          .hasSize(3)
          .allSatisfy(n -> assertThat(n.closes).as(n.name()).hasValue(1));

      CountingRedisNodeProvider.OPENED.clear();
      runner
          .withPropertyValues(countingNodes(), "redlock.drift-factor=2")
          .run(ctx -> assertThat(ctx).hasFailed());
      assertThat(CountingRedisNodeProvider.OPENED).isEmpty();
    }

    @Test
    @DisplayName("redlock.enabled=false switches it all off")
    void disabled() {
      runner
          .withPropertyValues(nodes(), "redlock.enabled=false")
          .run(ctx -> assertThat(ctx).doesNotHaveBean(Redlock.class));
    }

    @Test
    @DisplayName("the application's own Redlock wins, and the other beans are built on it")
    void ownRedlock() {
      runner
          .withUserConfiguration(OwnRedlock.class)
          .run(
              ctx -> {
                assertThat(ctx).hasSingleBean(Redlock.class);
                assertThat(ctx.getBean(Redlock.class)).isSameAs(ctx.getBean("myRedlock"));
                assertThat(ctx).hasSingleBean(RedlockLockProvider.class);
                assertThat(ctx).hasSingleBean(RedlockLockRegistry.class);
                // the node checks probe the application's Redlock as they would the starter's
                Health health = ctx.getBean(RedlockHealthIndicator.class).health();
                assertThat(health.getStatus()).isEqualTo(Status.UP);
                assertThat(health.getDetails()).containsKey("nodeChecksMillisAgo");
                assertThat(nodeDetails(health).values())
                    .allSatisfy(n -> assertThat(n).containsKey("clockOffsetMs"));
              });
    }

    @Test
    @DisplayName("customizers and listener beans are applied to the builder")
    void customizersAndListeners() {
      runner
          .withPropertyValues(nodes())
          .withUserConfiguration(CountingListenerAndCustomizer.class)
          .run(
              ctx -> {
                Redlock redlock = ctx.getBean(Redlock.class);
                assertThat(redlock.settings().maxExtensions()).isEqualTo(42);
                redlock.tryAcquire(resource(), Duration.ofSeconds(5)).orElseThrow().release();
                assertThat(ctx.getBean(CountingListenerAndCustomizer.class).acquisitions)
                    .hasValue(1);
              });
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnRedlock {
    @Bean(destroyMethod = "close")
    Redlock myRedlock() {
      return Redlock.builder().nodeUris(redis.uris()).build();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class CountingListenerAndCustomizer {
    final AtomicInteger acquisitions = new AtomicInteger();

    @Bean
    RedlockListener countingListener() {
      return new RedlockListener() {
        @Override
        public void acquisition(String resource, boolean acquired, int attempts, long nanos) {
          acquisitions.incrementAndGet();
        }
      };
    }

    @Bean
    RedlockBuilderCustomizer maxExtensions() {
      return b -> b.maxExtensions(42);
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnMeterRegistry {
    @Bean
    MeterRegistry meterRegistry() {
      return new SimpleMeterRegistry();
    }
  }

  @Nested
  @DisplayName("Micrometer")
  class Metrics {
    @Test
    @DisplayName(
        "with a MeterRegistry (Actuator's), acquisitions and node states are recorded into it")
    void recorded() {
      runner
          .withConfiguration(METRICS)
          .withPropertyValues(nodes())
          .run(
              ctx -> {
                assertThat(ctx).hasSingleBean(RedlockMetrics.class);
                assertThat(ctx).hasSingleBean(RedlockNodeMetrics.class);
                Redlock redlock = ctx.getBean(Redlock.class);
                redlock.tryAcquire(resource(), Duration.ofSeconds(5)).orElseThrow().release();
                MeterRegistry registry = ctx.getBean(MeterRegistry.class);
                assertThat(
                        registry
                            .get(RedlockMetrics.ACQUISITIONS)
                            .tag("result", "acquired")
                            .timer()
                            .count())
                    .isOne();
                assertThat(registry.get(RedlockNodeMetrics.QUORUM).gauge().value()).isEqualTo(1.0);
                assertThat(registry.get(RedlockMetrics.NODE_CALLS).timers())
                    .allSatisfy(t -> assertThat(t.getId().getTag("node")).doesNotContain(PASSWORD));
              });
    }

    @Test
    @DisplayName("together with the application's own listener, both hear the Redlock")
    void withOtherListeners() {
      runner
          .withConfiguration(METRICS)
          .withPropertyValues(nodes())
          .withUserConfiguration(CountingListenerAndCustomizer.class)
          .run(
              ctx -> {
                ctx.getBean(Redlock.class)
                    .tryAcquire(resource(), Duration.ofSeconds(5))
                    .orElseThrow()
                    .release();
                assertThat(ctx.getBean(CountingListenerAndCustomizer.class).acquisitions)
                    .hasValue(1);
                assertThat(
                        ctx.getBean(MeterRegistry.class)
                            .get(RedlockMetrics.ACQUISITIONS)
                            .tag("result", "acquired")
                            .timer()
                            .count())
                    .isOne();
              });
    }

    @Test
    @DisplayName("redlock.metrics.resource-tags=true tags meters with the resource")
    void resourceTags() {
      String resource = resource();
      runner
          .withUserConfiguration(OwnMeterRegistry.class)
          .withPropertyValues(nodes(), "redlock.metrics.resource-tags=true")
          .run(
              ctx -> {
                ctx.getBean(Redlock.class)
                    .tryAcquire(resource, Duration.ofSeconds(5))
                    .orElseThrow()
                    .release();
                assertThat(
                        ctx.getBean(MeterRegistry.class)
                            .get(RedlockMetrics.ACQUISITIONS)
                            .tags("resource", resource, "result", "acquired")
                            .timer()
                            .count())
                    .isOne();
              });
    }

    @Test
    @DisplayName("off without a MeterRegistry, without Micrometer, or with metrics disabled")
    void off() {
      runner
          .withPropertyValues(nodes())
          .run(ctx -> assertThat(ctx).doesNotHaveBean(RedlockMetrics.class));
      runner
          .withConfiguration(METRICS)
          .withPropertyValues(nodes(), "redlock.metrics.enabled=false")
          .run(ctx -> assertThat(ctx).doesNotHaveBean(RedlockMetrics.class));
      runner
          .withUserConfiguration(OwnMeterRegistry.class)
          .withClassLoader(new FilteredClassLoader(RedlockMetrics.class))
          .withPropertyValues(nodes())
          .run(
              ctx -> {
                assertThat(ctx).hasSingleBean(Redlock.class);
                assertThat(ctx).doesNotHaveBean(RedlockNodeMetrics.class);
              });
    }
  }

  @Nested
  @DisplayName("the health indicator")
  class HealthCheck {
    @Test
    @DisplayName("is UP with a quorum of nodes up, with details per node and no password")
    void up() {
      runner
          .withConfiguration(AutoConfigurations.of(HealthContributorAutoConfiguration.class))
          .withPropertyValues(nodes())
          .run(
              ctx -> {
                HealthIndicator indicator =
                    ctx.getBean("redlockHealthIndicator", HealthIndicator.class);
                Health health = indicator.health(); // the probe asks every node first
                assertThat(health.getStatus()).isEqualTo(Status.UP);
                assertThat(health.getDetails())
                    .containsEntry("quorum", 2)
                    .containsEntry("fencing", false);
                // a fan-out ends once its outcome is decided: the last node may still be unheard
                assertThat((Long) health.getDetails().get("nodesUp")).isBetween(2L, 3L);
                @SuppressWarnings("unchecked")
                Map<String, Map<String, Object>> nodes =
                    (Map<String, Map<String, Object>>) health.getDetails().get("nodes");
                assertThat(nodes).hasSize(3);
                assertThat(nodes.values())
                    .allSatisfy(n -> assertThat(n.get("state")).isIn("UP", "UNKNOWN"));
                assertThat(health.toString()).doesNotContain(PASSWORD);
              });
    }

    @Test
    @DisplayName(
        "shows every node's clock offset, durability, incarnation and uptime, as redlock doctor"
            + " does, and whether restart quarantine is on")
    void nodeChecks() {
      runner
          .withPropertyValues(nodes(), PATIENT_NODE_CHECKS)
          .run(
              ctx -> {
                Health health = ctx.getBean(RedlockHealthIndicator.class).health();
                assertThat(health.getStatus()).isEqualTo(Status.UP);
                assertThat(health.getDetails())
                    .containsEntry("restartQuarantineEnabled", false)
                    .doesNotContainKey("restartQuarantine")
                    .containsKey("nodeChecksMillisAgo");
                Map<String, Map<String, Object>> nodes = nodeDetails(health);
                assertThat(nodes).hasSize(3);
                assertThat(nodes.values())
                    .allSatisfy(
                        n -> {
                          assertThat(n)
                              .as(n.toString())
                              .containsKeys(
                                  "clockOffsetMs",
                                  "clockOffsetUncertaintyMs",
                                  "incarnation",
                                  "uptimeSeconds")
                              .doesNotContainKeys("clockError", "statusError")
                              .containsEntry("durable", false)
                              .containsEntry("quarantine", "off");
                          double offset = (Double) n.get("clockOffsetMs");
                          double uncertainty = (Double) n.get("clockOffsetUncertaintyMs");
                          assertThat(Math.abs(offset) - uncertainty)
                              .as("a Redis on this machine's clock: %s", n)
                              .isLessThan(RedlockHealthIndicator.CLOCK_OFFSET_LIMIT_MILLIS);
                          assertThat((Long) n.get("uptimeSeconds")).isNotNegative();
                          assertThat((String) n.get("incarnation")).isNotBlank();
                        });
                assertThat(warnings(health)).noneMatch(w -> w.contains("clock not synchronised"));
                assertThat(health.toString()).doesNotContain(PASSWORD);
              });
    }

    @Test
    @DisplayName(
        "warns, still UP, when a node is not durable and restart quarantine is off (Redis without"
            + " appendfsync always)")
    void notDurableWithoutQuarantine() {
      runner
          .withPropertyValues(nodes(), PATIENT_NODE_CHECKS)
          .run(
              ctx -> {
                Health health = ctx.getBean(RedlockHealthIndicator.class).health();
                assertThat(health.getStatus()).isEqualTo(Status.UP);
                List<String> warnings = warnings(health);
                assertThat(warnings)
                    .filteredOn(w -> w.startsWith("not durable, and restart quarantine is off"))
                    .singleElement()
                    .satisfies(
                        w ->
                            assertThat(w)
                                .contains(nodeDetails(health).keySet())
                                .contains("redlock.restart-quarantine")
                                .contains("appendfsync always"));
                assertThat(health.toString()).doesNotContain(PASSWORD);
              });
    }

    @Test
    @DisplayName(
        "with redlock.restart-quarantine=30s, non-durable nodes raise no such warning and show"
            + " their quarantine state")
    void notDurableWithQuarantine() {
      runner
          .withPropertyValues(nodes(), PATIENT_NODE_CHECKS, "redlock.restart-quarantine=30s")
          .run(
              ctx -> {
                Health health = ctx.getBean(RedlockHealthIndicator.class).health();
                // nodes in quarantine answer: they are up, though their votes may not count yet
                assertThat(health.getStatus()).isEqualTo(Status.UP);
                assertThat(health.getDetails())
                    .containsEntry("restartQuarantineEnabled", true)
                    .containsEntry("restartQuarantine", "PT30S");
                assertThat(warnings(health))
                    .noneMatch(w -> w.contains("restart quarantine is off"));
                assertThat(nodeDetails(health).values())
                    .allSatisfy(
                        n -> {
                          assertThat(n).containsEntry("durable", false);
                          assertThat(n.get("quarantine")).as(n.toString()).isIn("active", "passed");
                          if ("active".equals(n.get("quarantine"))) {
                            assertThat(n).containsKey("quarantineLeftMs");
                          }
                        });
              });
    }

    @Test
    @DisplayName("durable nodes (appendfsync always) need no quarantine and raise no warning")
    void durableNodes() {
      try (RedisServers durable = RedisServers.start(3, RedisServer.builder().appendOnly())) {
        runner
            .withPropertyValues(
                "redlock.nodes=" + String.join(",", durable.uris()), PATIENT_NODE_CHECKS)
            .run(
                ctx -> {
                  Health health = ctx.getBean(RedlockHealthIndicator.class).health();
                  assertThat(health.getStatus()).isEqualTo(Status.UP);
                  assertThat(health.getDetails()).doesNotContainKey("warnings");
                  assertThat(nodeDetails(health).values())
                      .allSatisfy(
                          n ->
                              assertThat(n)
                                  .containsEntry("durable", true)
                                  .containsEntry("quarantine", "not-needed"));
                });
      }
    }

    @Test
    @DisplayName(
        "warns, still UP, about a store whose clock is more than redlock doctor's 1 s from this"
            + " machine's")
    void clockOffsetWarning() {
      Assumptions.assumeTrue(
          RedisServer.canMoveClock(),
          "needs libfaketime (apt-get install -y libfaketime) to move a server's clock");
      try (RedisServer ahead = RedisServer.builder().clockOffset(Duration.ofSeconds(30)).start()) {
        List<String> uris = List.of(redis.get(0).uri(), ahead.uri(), redis.get(1).uri());
        runner
            .withPropertyValues("redlock.nodes=" + String.join(",", uris), PATIENT_NODE_CHECKS)
            .run(
                ctx -> {
                  Health health = ctx.getBean(RedlockHealthIndicator.class).health();
                  assertThat(health.getStatus()).isEqualTo(Status.UP);
                  String movedName =
                      nodeDetails(health).keySet().stream()
                          .filter(name -> name.startsWith(ahead.uri()))
                          .findFirst()
                          .orElseThrow();
                  Map<String, Object> moved = nodeDetails(health).get(movedName);
                  assertThat((Double) moved.get("clockOffsetMs"))
                      .as(moved.toString())
                      .isBetween(27_000.0, 33_000.0);
                  assertThat(warnings(health))
                      .filteredOn(w -> w.startsWith("store clock not synchronised"))
                      .singleElement()
                      .satisfies(
                          w ->
                              assertThat(w)
                                  .contains(movedName + " (store ", "ahead", "NTP")
                                  .doesNotContain(
                                      nodeDetails(health).keySet().stream()
                                          .filter(name -> !name.equals(movedName))
                                          .toList()
                                          .toArray(String[]::new)));
                });
      }
    }

    @Test
    @DisplayName(
        "keeps the node checks for health.probe-after, so that frequent polls do not ask the nodes"
            + " again")
    void nodeChecksCached() {
      CountingRedisNodeProvider.OPENED.clear();
      runner
          .withPropertyValues(countingNodes(), PATIENT_NODE_CHECKS, "redlock.health.probe-after=1h")
          .run(
              ctx -> {
                RedlockHealthIndicator indicator = ctx.getBean(RedlockHealthIndicator.class);
                Health first = indicator.health();
                Health second = indicator.health();
                Health third = indicator.health();
                assertThat(CountingRedisNodeProvider.OPENED)
                    .hasSize(3)
                    .allSatisfy(n -> assertThat(n.clockReads).hasValue(1));
                assertThat(nodeDetails(third).values())
                    .extracting(n -> n.get("clockOffsetMs"))
                    .containsExactlyElementsOf(
                        nodeDetails(first).values().stream()
                            .map(n -> n.get("clockOffsetMs"))
                            .toList());
                assertThat((Long) third.getDetails().get("nodeChecksMillisAgo"))
                    .isGreaterThanOrEqualTo((Long) first.getDetails().get("nodeChecksMillisAgo"));
                assertThat(second.getStatus()).isEqualTo(Status.UP);
              });
    }

    @Test
    @DisplayName("redlock.health.node-checks=false leaves the clock and status out")
    void nodeChecksOff() {
      CountingRedisNodeProvider.OPENED.clear();
      runner
          .withPropertyValues(countingNodes(), "redlock.health.node-checks=false")
          .run(
              ctx -> {
                Health health = ctx.getBean(RedlockHealthIndicator.class).health();
                assertThat(health.getStatus()).isEqualTo(Status.UP);
                assertThat(health.getDetails())
                    .doesNotContainKeys("nodeChecksMillisAgo", "warnings")
                    .containsEntry("restartQuarantineEnabled", false);
                assertThat(nodeDetails(health).values())
                    .allSatisfy(n -> assertThat(n).doesNotContainKeys("clockOffsetMs", "durable"));
                assertThat(CountingRedisNodeProvider.OPENED)
                    .allSatisfy(n -> assertThat(n.clockReads).hasValue(0));
              });
    }

    @Test
    @DisplayName("without the probe, before any call, it is UNKNOWN")
    void unknownWithoutProbe() {
      runner
          .withPropertyValues(nodes(), "redlock.health.probe=false")
          .run(
              ctx -> {
                Health health = ctx.getBean(RedlockHealthIndicator.class).health();
                assertThat(health.getStatus()).isIn(Status.UNKNOWN, Status.UP);
                ctx.getBean(Redlock.class)
                    .tryAcquire(resource(), Duration.ofSeconds(5))
                    .orElseThrow()
                    .release();
                assertThat(ctx.getBean(RedlockHealthIndicator.class).health().getStatus())
                    .isEqualTo(Status.UP);
              });
    }

    @Test
    @DisplayName(
        "is DOWN when too many nodes are down for a quorum, naming the last errors, though the"
            + " application made no call since")
    void down() {
      try (RedisServers own = RedisServers.start(3, RedisServer.builder().faultInjection())) {
        runner
            .withPropertyValues(
                "redlock.nodes=" + String.join(",", own.uris()),
                "redlock.node-timeout=300ms",
                "redlock.health.probe-after=500ms")
            .run(
                ctx -> {
                  RedlockHealthIndicator indicator = ctx.getBean(RedlockHealthIndicator.class);
                  assertThat(indicator.health().getStatus()).isEqualTo(Status.UP);
                  own.get(0).kill();
                  own.get(1).kill();
                  Thread.sleep(1_100); // nodes that answered within a second are slow, not down
                  Health health = indicator.health();
                  for (int i = 0; i < 5 && health.getStatus() != Status.DOWN; i++) {
                    health = indicator.health(); // each check probes: three failures make down
                  }
                  assertThat(health.getStatus()).isEqualTo(Status.DOWN);
                  assertThat(health.getDetails()).containsEntry("nodesUp", 1L);
                  assertThat(health.getDetails().get("nodes").toString()).contains("lastError");
                });
      }
    }

    @Test
    @DisplayName("is off with management.health.redlock.enabled=false, or without Actuator")
    void off() {
      runner
          .withPropertyValues(nodes(), "management.health.redlock.enabled=false")
          .run(ctx -> assertThat(ctx).doesNotHaveBean(RedlockHealthIndicator.class));
      runner
          .withClassLoader(new FilteredClassLoader(HealthIndicator.class))
          .withPropertyValues(nodes())
          .run(
              ctx -> {
                assertThat(ctx).hasSingleBean(Redlock.class);
                assertThat(ctx).doesNotHaveBean(RedlockHealthIndicator.class);
              });
    }
  }

  @Nested
  @DisplayName("ShedLock")
  class ShedLock {
    @Test
    @DisplayName("a RedlockLockProvider with the configured prefix locks on the quorum")
    void provider() {
      String name = "task-" + UUID.randomUUID();
      runner
          .withPropertyValues(nodes(), "redlock.shedlock.key-prefix=jobs:")
          .run(
              ctx -> {
                LockProvider provider = ctx.getBean(LockProvider.class);
                assertThat(provider).isInstanceOf(RedlockLockProvider.class);
                SimpleLock lock =
                    provider
                        .lock(
                            new LockConfiguration(
                                ClockProvider.now(), name, Duration.ofSeconds(30), Duration.ZERO))
                        .orElseThrow();
                assertThat(redis.get(0).command("GET", "jobs:" + name)).isNotNull();
                lock.unlock();
              });
    }

    @Test
    @DisplayName("backs off for the application's provider, when disabled, or without ShedLock")
    void off() {
      runner
          .withPropertyValues(nodes(), "redlock.shedlock.enabled=false")
          .run(ctx -> assertThat(ctx).doesNotHaveBean(LockProvider.class));
      runner
          .withClassLoader(new FilteredClassLoader(LockProvider.class))
          .withPropertyValues(nodes())
          .run(ctx -> assertThat(ctx).doesNotHaveBean(RedlockLockProvider.class));
      runner
          .withPropertyValues(nodes())
          .withBean("ownProvider", LockProvider.class, () -> c -> Optional.empty())
          .run(
              ctx -> {
                assertThat(ctx).hasSingleBean(LockProvider.class);
                assertThat(ctx).doesNotHaveBean(RedlockLockProvider.class);
              });
    }
  }

  @Nested
  @DisplayName("Spring Integration")
  class Integration {
    @Test
    @DisplayName("a RedlockLockRegistry with redlock.ttl and the configured prefix")
    void registry() throws Exception {
      String key = "key-" + UUID.randomUUID();
      runner
          .withPropertyValues(nodes(), "redlock.ttl=7s", "redlock.integration.key-prefix=si:")
          .run(
              ctx -> {
                LockRegistry registry = ctx.getBean(LockRegistry.class);
                assertThat(registry).isInstanceOf(RedlockLockRegistry.class);
                assertThat(((RedlockLockRegistry) registry).ttl()).isEqualTo(Duration.ofSeconds(7));
                Lock lock = registry.obtain(key);
                assertThat(lock.tryLock(5, TimeUnit.SECONDS)).isTrue();
                try {
                  long pttl =
                      Long.parseLong(redis.get(0).command("PTTL", "si:" + key).replace(":", ""));
                  assertThat(pttl).isBetween(5_000L, 7_000L);
                } finally {
                  lock.unlock();
                }
              });
    }

    @Test
    @DisplayName("backs off for the application's registry, when disabled, or without it")
    void off() {
      runner
          .withPropertyValues(nodes(), "redlock.integration.enabled=false")
          .run(ctx -> assertThat(ctx).doesNotHaveBean(LockRegistry.class));
      runner
          .withClassLoader(new FilteredClassLoader(LockRegistry.class))
          .withPropertyValues(nodes())
          .run(ctx -> assertThat(ctx).doesNotHaveBean(RedlockLockRegistry.class));
      runner
          .withPropertyValues(nodes())
          .withBean(DefaultLockRegistry.class)
          .run(ctx -> assertThat(ctx).doesNotHaveBean(RedlockLockRegistry.class));
    }
  }

  @Test
  @DisplayName("configuration metadata for IDE completion lists the properties with defaults")
  void metadata() throws Exception {
    try (InputStream in =
        getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).isNotNull();
      String json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertThat(json)
          .contains("\"redlock.nodes\"")
          .contains("\"redlock.ttl\"")
          .contains("\"redlock.fencing\"")
          .contains("\"redlock.retry.attempts\"")
          .contains("\"redlock.restart-quarantine\"")
          .contains("\"redlock.health.node-checks\"")
          .contains("\"redlock.health.node-check-timeout\"")
          .contains("\"management.health.redlock.enabled\"")
          .contains("\"defaultValue\": \"30s\"");
    }
  }
}
