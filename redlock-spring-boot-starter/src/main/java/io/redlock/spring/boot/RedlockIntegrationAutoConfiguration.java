package io.redlock.spring.boot;

import io.redlock.Redlock;
import io.redlock.spring.integration.RedlockLockRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * A Spring Integration {@link LockRegistry} on the Redlock, when Spring Integration and {@code
 * redlock-spring-integration} are on the class path and the application has no registry of its own;
 * its leases live {@code redlock.ttl} between renewals. Off with {@code
 * redlock.integration.enabled=false}.
 */
@AutoConfiguration(after = RedlockAutoConfiguration.class)
@ConditionalOnClass({LockRegistry.class, RedlockLockRegistry.class, Redlock.class})
@ConditionalOnBean(Redlock.class)
@ConditionalOnProperty(prefix = "redlock.integration", name = "enabled", matchIfMissing = true)
public class RedlockIntegrationAutoConfiguration {

  /** The registry; keys get {@code redlock.integration.key-prefix} before them. */
  @Bean
  @ConditionalOnMissingBean(LockRegistry.class)
  public RedlockLockRegistry redlockLockRegistry(Redlock redlock, RedlockProperties properties) {
    return new RedlockLockRegistry(
        redlock, properties.getTtl(), properties.getIntegration().getKeyPrefix());
  }
}
