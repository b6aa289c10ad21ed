package io.redlock.spring.boot;

import io.micrometer.core.instrument.MeterRegistry;
import io.redlock.Redlock;
import io.redlock.micrometer.RedlockMetrics;
import io.redlock.micrometer.RedlockNodeMetrics;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Redlock metrics into the application's {@link MeterRegistry}: the {@link RedlockMetrics} listener
 * (heard by the auto-configured Redlock) and the {@link RedlockNodeMetrics} node-health gauges. On
 * when Micrometer and {@code redlock-micrometer} are on the class path and a registry exists (e.g.
 * from Spring Boot Actuator); off with {@code redlock.metrics.enabled=false}.
 */
@AutoConfiguration(
    after = RedlockAutoConfiguration.class,
    afterName = {
      "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration"
    })
@ConditionalOnClass({MeterRegistry.class, RedlockMetrics.class, Redlock.class})
@ConditionalOnBean(MeterRegistry.class)
@ConditionalOnProperty(prefix = "redlock.metrics", name = "enabled", matchIfMissing = true)
public class RedlockMetricsAutoConfiguration {

  /** The listener that records node calls, acquisitions, extensions, releases and losses. */
  @Bean
  @ConditionalOnMissingBean
  public RedlockMetrics redlockMetrics(MeterRegistry registry, RedlockProperties properties) {
    return RedlockMetrics.builder(registry)
        .resourceTags(properties.getMetrics().isResourceTags())
        .build();
  }

  /** Node-state gauges, bound to every registry by Spring Boot. */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnBean(Redlock.class)
  public RedlockNodeMetrics redlockNodeMetrics(Redlock redlock) {
    return new RedlockNodeMetrics(redlock);
  }
}
