package io.redlock.spring.boot;

import io.redlock.Redlock;
import io.redlock.shedlock.RedlockLockProvider;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * A ShedLock {@link LockProvider} on the Redlock, when ShedLock and {@code redlock-shedlock} are on
 * the class path and the application has no provider of its own: {@code @SchedulerLock} tasks then
 * lock on the quorum. Off with {@code redlock.shedlock.enabled=false}.
 */
@AutoConfiguration(after = RedlockAutoConfiguration.class)
@ConditionalOnClass({LockProvider.class, RedlockLockProvider.class, Redlock.class})
@ConditionalOnBean(Redlock.class)
@ConditionalOnProperty(prefix = "redlock.shedlock", name = "enabled", matchIfMissing = true)
public class RedlockShedLockAutoConfiguration {

  /** The provider; lock names get {@code redlock.shedlock.key-prefix} before them. */
  @Bean
  @ConditionalOnMissingBean(LockProvider.class)
  public RedlockLockProvider redlockLockProvider(Redlock redlock, RedlockProperties properties) {
    return new RedlockLockProvider(redlock, properties.getShedlock().getKeyPrefix());
  }
}
