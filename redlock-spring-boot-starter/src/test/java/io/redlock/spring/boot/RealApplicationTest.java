package io.redlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.redlock.Redlock;
import io.redlock.micrometer.RedlockMetrics;
import io.redlock.testservers.RedisServers;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * Two instances of a real Spring Boot application (full auto-configuration, Actuator, ShedLock's
 * {@code @SchedulerLock} on a {@code @Scheduled} job) against 3 real Redis servers: the job runs on
 * one instance at a time.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("a real Spring Boot application, two instances, 3 Redis")
class RealApplicationTest {
  /** One run of the job: which instance, from when to when (nanoTime). */
  record Run(String instance, long start, long end) {}

  static final List<Run> RUNS = new CopyOnWriteArrayList<>();

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @EnableScheduling
  @EnableSchedulerLock(defaultLockAtMostFor = "10s")
  static class App {
    @Bean
    ReportJob reportJob(@Value("${instance}") String instance) {
      return new ReportJob(instance);
    }
  }

  static class ReportJob {
    private final String instance;

    ReportJob(String instance) {
      this.instance = instance;
    }

    @Scheduled(fixedRate = 100)
    @SchedulerLock(name = "report", lockAtLeastFor = "150ms")
    public void report() throws InterruptedException {
      long start = System.nanoTime();
      Thread.sleep(20);
      RUNS.add(new Run(instance, start, System.nanoTime()));
      System.out.println("instance " + instance + " ran the report job");
    }
  }

  private static ConfigurableApplicationContext start(
      String instance, List<String> nodes, String keyPrefix) {
    return new SpringApplicationBuilder(App.class)
        .web(WebApplicationType.NONE)
        .properties(
            "instance=" + instance,
            "spring.application.name=app-" + instance,
            "redlock.nodes=" + String.join(",", nodes),
            "redlock.node-timeout=500ms",
            "redlock.shedlock.key-prefix=" + keyPrefix) // one for both: they lock one key
        .run();
  }

  @Test
  @DisplayName(
      "the @SchedulerLock job never runs on both instances at once; health is UP and metrics"
          + " are recorded")
  void twoInstances() throws Exception {
    RUNS.clear();
    try (RedisServers redis = RedisServers.start(3)) {
      List<String> nodes = redis.uris();
      String keyPrefix = "test-" + System.nanoTime() + ":";
      try (ConfigurableApplicationContext a = start("A", nodes, keyPrefix);
          ConfigurableApplicationContext b = start("B", nodes, keyPrefix)) {
        for (ConfigurableApplicationContext ctx : List.of(a, b)) {
          assertThat(ctx.getBean(Redlock.class).nodes()).hasSize(3);
          assertThat(ctx.getBean(LockProvider.class)).isNotNull();
          assertThat(ctx.getBean(LockRegistry.class)).isNotNull();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (RUNS.size() < 10 && System.nanoTime() < deadline) {
          Thread.sleep(50);
        }
        for (ConfigurableApplicationContext ctx : List.of(a, b)) {
          HealthIndicator health = ctx.getBean("redlockHealthIndicator", HealthIndicator.class);
          assertThat(health.health().getStatus()).isEqualTo(Status.UP);
          assertThat(
                  ctx
                      .getBean(MeterRegistry.class)
                      .get(RedlockMetrics.ACQUISITIONS)
                      .timers()
                      .stream()
                      .mapToLong(t -> t.count())
                      .sum())
              .as("acquisitions recorded by Actuator's registry")
              .isPositive();
        }
      }
    }
    List<Run> runs = new ArrayList<>(RUNS);
    assertThat(runs).hasSizeGreaterThanOrEqualTo(10);
    runs.sort(Comparator.comparingLong(Run::start));
    for (int i = 1; i < runs.size(); i++) {
      assertThat(runs.get(i).start())
          .as("run %d starts after run %d ended", i, i - 1)
          .isGreaterThan(runs.get(i - 1).end());
    }
    System.out.println(
        "runs by instance: "
            + runs.stream()
                .collect(
                    java.util.stream.Collectors.groupingBy(
                        Run::instance, java.util.stream.Collectors.counting())));
  }
}
