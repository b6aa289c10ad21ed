package io.redlock.spring.boot;

import io.redlock.Redlock;
import io.redlock.RedlockBuilder;
import io.redlock.RedlockListener;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodes;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * A {@link Redlock} bean from the {@code redlock.*} properties ({@link RedlockProperties}), when
 * {@code redlock.nodes} names at least one node and the application has no Redlock of its own.
 * Every {@link RedlockListener} bean hears it (the Micrometer metrics among them), and every {@link
 * RedlockBuilderCustomizer} bean may adjust the builder last. The Redlock is closed when the
 * context is, and closes its nodes.
 */
@AutoConfiguration
@ConditionalOnClass(Redlock.class)
@ConditionalOnProperty(prefix = "redlock", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(RedlockProperties.class)
public class RedlockAutoConfiguration {

  /**
   * The Redlock over {@code redlock.nodes}. The nodes are opened here (with {@link
   * LockNodes#openAll}), before the customizers see the builder; the Redlock owns them from then on
   * and closes them, once, when it is closed. If a customizer or the build fails, the nodes opened
   * here are closed again.
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  @Conditional(OnNodesConfigured.class)
  public Redlock redlock(
      RedlockProperties properties,
      ObjectProvider<RedlockListener> listeners,
      ObjectProvider<RedlockBuilderCustomizer> customizers) {
    // Settings first: a bad one fails here, before any connection is opened.
    RedlockBuilder builder = Redlock.builder().settings(properties.settings());
    List<RedlockListener> all = listeners.orderedStream().toList();
    if (all.size() == 1) {
      builder.listener(all.get(0));
    } else if (all.size() > 1) {
      builder.listener(new CompositeRedlockListener(all));
    }
    // Opens every node, or none: openAll closes those it opened if a later one fails.
    List<LockNode> opened = LockNodes.discover().openAll(properties.getNodes());
    try {
      builder.nodes(opened);
      customizers.orderedStream().forEach(c -> c.customize(builder));
      return builder.build();
    } catch (RuntimeException | Error e) {
      // Nodes given as objects stay the caller's when the build fails: give them back.
      LockNodes.closeQuietly(opened, e);
      throw e;
    }
  }

  /** Matches when {@code redlock.nodes} binds to a non-empty list (comma-separated or indexed). */
  static final class OnNodesConfigured extends SpringBootCondition {
    @Override
    public ConditionOutcome getMatchOutcome(
        ConditionContext context, AnnotatedTypeMetadata metadata) {
      List<String> nodes =
          Binder.get(context.getEnvironment())
              .bind("redlock.nodes", Bindable.listOf(String.class))
              .orElse(List.of());
      return nodes.isEmpty()
          ? ConditionOutcome.noMatch("redlock.nodes is not set")
          : ConditionOutcome.match("redlock.nodes names " + nodes.size() + " node(s)");
    }
  }
}
