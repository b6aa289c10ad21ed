package io.redlock.spring.boot;

import io.redlock.RedlockBuilder;

/**
 * Adjusts the auto-configured Redlock's builder after the {@code redlock.*} properties were
 * applied, e.g. to add nodes built as objects ({@code JdbcLockNode.builder(dataSource)}) or a
 * ticker. Declare one or more as beans; they run in {@link
 * org.springframework.core.annotation.Order} order.
 */
@FunctionalInterface
public interface RedlockBuilderCustomizer {
  /** Adjusts {@code builder}; called once, before {@code build()}. */
  void customize(RedlockBuilder builder);
}
