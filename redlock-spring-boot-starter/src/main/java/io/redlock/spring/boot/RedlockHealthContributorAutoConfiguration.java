package io.redlock.spring.boot;

import io.redlock.Redlock;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code redlock} health indicator ({@link RedlockHealthIndicator}), when Spring Boot Actuator
 * is on the class path; off with {@code management.health.redlock.enabled=false}.
 */
@AutoConfiguration(
    after = RedlockAutoConfiguration.class,
    beforeName =
        "org.springframework.boot.actuate.autoconfigure.health.HealthContributorAutoConfiguration")
@ConditionalOnClass({HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class})
@ConditionalOnBean(Redlock.class)
@ConditionalOnEnabledHealthIndicator("redlock")
public class RedlockHealthContributorAutoConfiguration {

  /** Named {@code redlockHealthIndicator}: it shows as {@code redlock} under /actuator/health. */
  @Bean
  @ConditionalOnMissingBean(name = "redlockHealthIndicator")
  public RedlockHealthIndicator redlockHealthIndicator(
      Redlock redlock, RedlockProperties properties) {
    RedlockProperties.Health health = properties.getHealth();
    return new RedlockHealthIndicator(
        redlock,
        health.isProbe() ? health.getProbeResource() : null,
        health.getProbeAfter(),
        health.isNodeChecks() ? health.getNodeCheckTimeout() : null);
  }
}
