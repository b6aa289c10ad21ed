package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
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

  /**
   * R17.1: {@code inspect} of a free key is empty; of a held key, the holder's token and a
   * remaining TTL in {@code (0, ttl + one precision step]}; after the release, empty again.
   *
   * <p>If this fails, check that the token is read back as it was written (the same encoding as
   * compare-and-delete compares), and that the remaining time is the expiry less the store's clock
   * in the right unit.
   */
  @Test
  @DisplayName("R17.1 inspect() names the holder and its remaining TTL, and nothing when free")
  default void r17_1_inspectNamesHolder(Harness h) {
    h.requireInspection("R17.1");
    LockNode n = h.node();
    String key = h.key("r17.1");
    String token = token();
    assertThat(inspect(h, n, key)).as("R17.1: inspect() of a key nobody took").isEmpty();

    Duration ttl = h.ttl(Duration.ofSeconds(30));
    assertTrue(h.acquire(n, key, token, ttl), "R17.1: tryAcquire of a fresh key");
    KeyHolder holder = inspect(h, n, key).orElse(null);
    assertThat(holder).as("R17.1: inspect() of a held key").isNotNull();
    assertThat(holder.token()).as("R17.1: the holder's token").isEqualTo(token);
    assertThat(holder.remainingTtl())
        .as("R17.1: the remaining TTL of a key just taken for %s", ttl)
        .isPositive()
        .isLessThanOrEqualTo(ttl.plus(h.precision()));

    assertTrue(h.release(n, key, token), "R17.1: release by the holder");
    assertThat(inspect(h, n, key)).as("R17.1: inspect() after the release").isEmpty();
  }

  /**
   * R17.2: an expired key is free to {@code inspect}, even if the store still keeps its entry.
   *
   * <p>If this fails, filter on the expiry by the store's clock, as {@code tryAcquire} does.
   */
  @Test
  @DisplayName("R17.2 inspect() of an expired key is empty")
  default void r17_2_expiredKeyIsFree(Harness h) {
    h.requireInspection("R17.2");
    LockNode n = h.node();
    String key = h.key("r17.2");
    Duration ttl = h.ttl(Duration.ofMillis(300));
    assertTrue(h.acquire(n, key, token(), ttl), "R17.2: tryAcquire of a fresh key");
    h.sleepPastExpiry(System.nanoTime(), ttl);
    assertThat(inspect(h, n, key)).as("R17.2: inspect() of a key whose TTL ran out").isEmpty();
  }

  /**
   * R17.3: {@code inspect} refuses an empty key with {@link IllegalArgumentException} and throws
   * {@link IllegalStateException} naming the node after close.
   *
   * <p>If this fails, check the key and the closed flag first, as the other calls do.
   */
  @Test
  @DisplayName("R17.3 inspect() checks its key and refuses after close")
  default void r17_3_inspectChecksArguments(Harness h) {
    h.requireInspection("R17.3");
    assertThat(h.thrownByCall(() -> h.node().inspect("")))
        .as("R17.3: inspect(\"\")")
        .isInstanceOf(IllegalArgumentException.class);
    h.assertRefusedAfterClose("R17.3", Map.of("inspect()", n -> n.inspect(h.key("r17.3"))));
  }

  private Optional<KeyHolder> inspect(Harness h, LockNode n, String key) {
    return h.await(n.inspect(key), "inspect");
  }
}
