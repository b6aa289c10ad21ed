package io.redlock.micrometer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.redlock.NodeHealth;
import io.redlock.Redlock;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Gauges of the nodes' health as a {@link Redlock} sees it ({@link Redlock#health()}, no network
 * call): read when the registry is scraped.
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>tags</th><th>value</th></tr>
 *   <tr><td>{@value #STATE}</td><td>node, state = up | down | unknown</td>
 *       <td>1 for the node's current state, 0 for the others</td></tr>
 *   <tr><td>{@value #IN_FLIGHT}</td><td>node</td>
 *       <td>calls started on the node and not yet ended</td></tr>
 *   <tr><td>{@value #QUORUM}</td><td></td>
 *       <td>1 while at least a quorum of nodes is up, else 0</td></tr>
 * </table>
 *
 * <p>The gauges hold the Redlock weakly: they read NaN once it was garbage-collected. A closed
 * Redlock reports its last states; unbind by removing the meters if that matters.
 */
public final class RedlockNodeMetrics implements MeterBinder {
  /** Gauge of each node's state. */
  public static final String STATE = "redlock.node.state";

  /** Gauge of each node's calls in flight. */
  public static final String IN_FLIGHT = "redlock.node.calls.in.flight";

  /** Gauge: is a quorum of nodes up. */
  public static final String QUORUM = "redlock.quorum.up";

  private final Redlock redlock;
  private final Tags tags;

  /** Node gauges of {@code redlock}, without extra tags. */
  public RedlockNodeMetrics(Redlock redlock) {
    this(redlock, Tags.empty());
  }

  /** Node gauges of {@code redlock}, each with {@code tags} too. */
  public RedlockNodeMetrics(Redlock redlock, Iterable<Tag> tags) {
    this.redlock = Objects.requireNonNull(redlock, "redlock must not be null");
    this.tags = Tags.of(Objects.requireNonNull(tags, "tags must not be null"));
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    List<String> nodes = redlock.nodes();
    for (int i = 0; i < nodes.size(); i++) {
      int index = i;
      String node = nodes.get(i);
      for (NodeHealth.State state : NodeHealth.State.values()) {
        Gauge.builder(STATE, redlock, r -> health(r, index).state() == state ? 1 : 0)
            .description("1 for the node's current state as this client sees it, else 0")
            .tags(tags)
            .tag("node", node)
            .tag("state", state.name().toLowerCase(Locale.ROOT))
            .register(registry);
      }
      Gauge.builder(IN_FLIGHT, redlock, r -> health(r, index).callsInFlight())
          .description("Calls started on the node and not yet ended")
          .tags(tags)
          .tag("node", node)
          .register(registry);
    }
    Gauge.builder(QUORUM, redlock, RedlockNodeMetrics::quorumUp)
        .description("1 while at least a quorum of nodes is up, else 0")
        .tags(tags)
        .register(registry);
  }

  private static NodeHealth health(Redlock redlock, int index) {
    return redlock.health().get(index);
  }

  private static double quorumUp(Redlock redlock) {
    long up = redlock.health().stream().filter(h -> h.state() == NodeHealth.State.UP).count();
    return up >= redlock.quorum() ? 1 : 0;
  }
}
