package io.redlock.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.ReleaseOutcome;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.ServiceLoader;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The engine as a user meets it: through {@link Redlock#builder()}, found by ServiceLoader. */
@DisplayName("The engine is found through ServiceLoader")
class EngineDiscoveryTest {

  @Test
  void as_the_one_registered_engine_provider() {
    assertThat(ServiceLoader.load(RedlockEngineProvider.class).stream())
        .singleElement()
        .satisfies(
            p ->
                assertThat(p.type().getName())
                    .isEqualTo("io.redlock.engine.internal.QuorumEngineProvider"));
  }

  @Test
  void by_the_builder_which_hands_it_the_nodes_settings_and_ticker() throws Exception {
    AtomicLong now = new AtomicLong();
    InMemoryLockNode a = new InMemoryLockNode("a", now::get);
    InMemoryLockNode b = new InMemoryLockNode("b", now::get);
    InMemoryLockNode c = new InMemoryLockNode("c", now::get);

    try (Redlock redlock =
        Redlock.builder()
            .nodes(a, b, c)
            .driftBuffer(Duration.ofMillis(5))
            .ticker(now::get)
            .build()) {
      assertThat(redlock.getClass().getPackageName()).isEqualTo("io.redlock.engine.internal");
      assertThat(redlock.nodes()).containsExactly("a", "b", "c");
      assertThat(redlock.quorum()).isEqualTo(2);

      Lease lease = redlock.acquire("invoice-42", Duration.ofSeconds(1), Duration.ZERO);
      // drift 10 + 5 ms, and 1 ms for the in-memory nodes' TTL precision
      assertThat(lease.remainingValidity()).isEqualTo(Duration.ofMillis(1_000 - 10 - 5 - 1));
      assertThat(a.owner("invoice-42")).contains(lease.token());
      assertThat(redlock.tryAcquire("invoice-42", Duration.ofSeconds(1))).isEmpty();

      ReleaseOutcome outcome = lease.release();
      assertThat(outcome.deleted()).isEqualTo(3);
      assertThat(redlock.withLease("invoice-42", Duration.ofSeconds(1), Lease::isValid)).isTrue();
    }
    // the Redlock owned the nodes and closed them
    assertThatThrownBy(() -> a.tryAcquire("k", "t", Duration.ofSeconds(1)))
        .isInstanceOf(IllegalStateException.class);
  }
}
