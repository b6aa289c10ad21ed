package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.NodeHealth;
import io.redlock.NodeReport;
import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import io.redlock.spi.Reply;
import io.redlock.spi.support.Replies;
import io.redlock.tck.InMemoryLockNode;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Redlock.probe")
class ProbeTest {

  private static QuorumRedlock redlock(RedlockSettings settings, LockNode... nodes) {
    return new QuorumRedlock(
        List.of(nodes),
        settings,
        Ticker.system(),
        Sleeper.SYSTEM,
        java.util.concurrent.ThreadLocalRandom.current(),
        false,
        io.redlock.RedlockListener.NONE);
  }

  @Test
  @DisplayName("times lock cycles, reads status and clock offset on every node, refreshes health")
  void probesEveryNode() {
    InMemoryLockNode ahead =
        new InMemoryLockNode(
            "ahead",
            Ticker.system(),
            false,
            Clock.offset(Clock.systemUTC(), Duration.ofSeconds(30)));
    InMemoryLockNode durable = new InMemoryLockNode("durable", Ticker.system(), true);
    InMemoryLockNode plain = new InMemoryLockNode("plain");
    try (QuorumRedlock redlock = redlock(RedlockSettings.defaults(), ahead, durable, plain)) {
      List<NodeReport> reports = redlock.probe(3, Duration.ofSeconds(5));

      assertThat(reports).extracting(NodeReport::node).containsExactly("ahead", "durable", "plain");
      for (NodeReport r : reports) {
        assertThat(r.reachable()).isTrue();
        assertThat(r.votes()).isTrue();
        assertThat(r.error()).isEmpty();
        assertThat(r.roundTrips()).hasSize(9);
        assertThat(r.anomalies()).isEmpty();
        assertThat(r.status()).isPresent();
        assertThat(r.statusError()).isEmpty();
        assertThat(r.clockUncertainty()).isPresent();
        assertThat(r.clockNote()).isEmpty();
      }
      Duration offset = reports.get(0).clockOffset().orElseThrow();
      assertThat(offset).isBetween(Duration.ofSeconds(29), Duration.ofSeconds(31));
      assertThat(reports.get(2).clockOffset().orElseThrow().abs())
          .isLessThan(Duration.ofSeconds(1));
      assertThat(reports)
          .extracting(NodeReport::quarantine)
          .containsExactly(
              NodeReport.Quarantine.OFF,
              NodeReport.Quarantine.NOT_NEEDED,
              NodeReport.Quarantine.OFF);
      assertThat(redlock.health()).extracting(NodeHealth::state).containsOnly(NodeHealth.State.UP);
      // every probe key was released
      assertThat(List.of(ahead, durable, plain)).allMatch(n -> n.heldKeys() == 0);
    }
  }

  @Test
  @DisplayName("reports a node that restarted without durability as in restart quarantine")
  void quarantine() {
    RedlockSettings settings =
        RedlockSettings.defaults().withRestartQuarantine(Duration.ofMinutes(1));
    InMemoryLockNode fresh = new InMemoryLockNode("fresh");
    InMemoryLockNode durable = new InMemoryLockNode("durable", Ticker.system(), true);
    try (QuorumRedlock redlock = redlock(settings, fresh, durable)) {
      List<NodeReport> reports = redlock.probe(Duration.ofSeconds(5));

      NodeReport active = reports.get(0);
      assertThat(active.quarantine()).isEqualTo(NodeReport.Quarantine.ACTIVE);
      assertThat(active.quarantine().label()).isEqualTo("active");
      assertThat(active.quarantineLeft().orElseThrow())
          .isGreaterThan(Duration.ofSeconds(50))
          .isLessThanOrEqualTo(
              Duration.ofMinutes(1).plus(settings.driftFor(Duration.ofMinutes(1))));
      assertThat(active.votes()).isFalse();
      assertThat(reports.get(1).quarantine()).isEqualTo(NodeReport.Quarantine.NOT_NEEDED);
      assertThat(reports.get(1).votes()).isTrue();
    }
  }

  @Test
  @DisplayName("a node that fails or never answers is unreachable; the others are not held up")
  void failuresAndSilence() {
    List<String> log = LiveNode.newLog();
    LiveNode down = new LiveNode("down", log).down(true);
    Silent silent = new Silent("silent");
    InMemoryLockNode fine = new InMemoryLockNode("fine");
    try (QuorumRedlock redlock = redlock(RedlockSettings.defaults(), down, silent, fine)) {
      long start = System.nanoTime();
      List<NodeReport> reports = redlock.probe(2, Duration.ofMillis(300));
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));

      NodeReport d = reports.get(0);
      assertThat(d.reachable()).isFalse();
      assertThat(d.votes()).isFalse();
      assertThat(d.error().orElseThrow()).contains("down (injected)").doesNotStartWith("down: ");
      assertThat(d.quarantine()).isEqualTo(NodeReport.Quarantine.NOT_APPLICABLE);
      NodeReport s = reports.get(1);
      assertThat(s.reachable()).isFalse();
      assertThat(s.error().orElseThrow()).containsIgnoringCase("no answer");
      NodeReport f = reports.get(2);
      assertThat(f.reachable()).isTrue();
      assertThat(f.roundTrips()).hasSize(6);
    }
  }

  @Test
  @DisplayName("refuses bad arguments with the fix, and a closed Redlock")
  void badArguments() {
    QuorumRedlock redlock = redlock(RedlockSettings.defaults(), new InMemoryLockNode("a"));
    assertThatThrownBy(() -> redlock.probe(0, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("rounds must be at least 1");
    assertThatThrownBy(() -> redlock.probe(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("timeout must be positive");
    redlock.close();
    assertThatThrownBy(() -> redlock.probe(Duration.ofSeconds(1)))
        .isInstanceOf(IllegalStateException.class);
  }

  /** A node whose lock calls are never answered. */
  private static final class Silent extends WrappingNode {
    Silent(String name) {
      super(new InMemoryLockNode(name));
    }

    @Override
    <T> Reply<T> wrap(Supplier<Reply<T>> call) {
      return Replies.of(new CompletableFuture<>(), name());
    }
  }
}
