package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.KeyHolder;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * R17 Inspection: {@code inspect(key)} tells who holds a key and for how long (if declared). The
 * engine never uses it; operators' tools do ({@code redlock status}, {@code redlock unlock
 * --force}), and a wrong answer there makes a person release somebody else's lock.
 */
interface R17Inspection {

  @Test
  @DisplayName("R17.1 inspect() names the holder and its remaining TTL, and nothing when free")
  default void r17_1_inspectNamesHolder(Harness h) {
    h.requireInspection("R17.1");
    String key = h.key("r17.1");
    String token = token();
    assertThat(inspect(h, key)).as("R17.1: inspect() of a key nobody took").isEmpty();

    Duration ttl = h.ttl(Duration.ofSeconds(30));
    assertTrue(h.acquire(key, token, ttl), "R17.1: tryAcquire of a fresh key");
    KeyHolder holder = inspect(h, key).orElse(null);
    assertThat(holder).as("R17.1: inspect() of a held key").isNotNull();
    assertThat(holder.token()).as("R17.1: the holder's token").isEqualTo(token);
    assertThat(holder.remainingTtl())
        .as("R17.1: the remaining TTL of a key just taken for %s", ttl)
        .isPositive()
        .isLessThanOrEqualTo(ttl.plus(h.precision()));

    assertTrue(h.release(key, token), "R17.1: release by the holder");
    assertThat(inspect(h, key)).as("R17.1: inspect() after the release").isEmpty();
  }

  @Test
  @DisplayName("R17.2 inspect() of an expired key is empty")
  default void r17_2_expiredKeyIsFree(Harness h) {
    h.requireInspection("R17.2");
    String key = h.key("r17.2");
    Duration ttl = h.ttl(Duration.ofMillis(300));
    assertTrue(h.acquire(key, token(), ttl), "R17.2: tryAcquire of a fresh key");
    h.sleepPastExpiry(System.nanoTime(), ttl);
    assertThat(inspect(h, key)).as("R17.2: inspect() of a key whose TTL ran out").isEmpty();
  }

  @Test
  @DisplayName("R17.3 inspect() checks its key and refuses after close")
  default void r17_3_inspectChecksArguments(Harness h) {
    h.requireInspection("R17.3");
    assertThat(h.thrownByCall(() -> h.node().inspect("")))
        .as("R17.3: inspect(\"\")")
        .isInstanceOf(IllegalArgumentException.class);
    h.assertRefusedAfterClose("R17.3", Map.of("inspect()", n -> n.inspect(h.key("r17.3"))));
  }

  private Optional<KeyHolder> inspect(Harness h, String key) {
    return h.await(h.node().inspect(key), "inspect");
  }
}
