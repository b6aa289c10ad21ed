package io.redlock.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * R17 Inspection: {@code inspect(key)} tells who holds a key and for how long (if declared). The
 * engine never uses it; operators' tools do ({@code redlock status}, {@code redlock unlock
 * --force}), and a wrong answer there makes a person release somebody else's lock.
 */
abstract class R17Inspection extends R16Replies {

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
  void r17_1_inspectNamesHolder() {
    requireInspection("R17.1");
    LockNode n = node();
    String key = key("r17.1");
    String token = token();
    assertThat(inspect(n, key)).as("R17.1: inspect() of a key nobody took").isEmpty();

    Duration ttl = ttl(Duration.ofSeconds(30));
    assertThat(acquire(n, key, token, ttl)).as("R17.1: tryAcquire of a fresh key").isTrue();
    KeyHolder holder = inspect(n, key).orElse(null);
    assertThat(holder).as("R17.1: inspect() of a held key").isNotNull();
    assertThat(holder.token()).as("R17.1: the holder's token").isEqualTo(token);
    assertThat(holder.remainingTtl())
        .as("R17.1: the remaining TTL of a key just taken for %s", ttl)
        .isPositive()
        .isLessThanOrEqualTo(ttl.plus(precision()));

    assertThat(release(n, key, token)).as("R17.1: release by the holder").isTrue();
    assertThat(inspect(n, key)).as("R17.1: inspect() after the release").isEmpty();
  }

  /**
   * R17.2: an expired key is free to {@code inspect}, even if the store still keeps its entry.
   *
   * <p>If this fails, filter on the expiry by the store's clock, as {@code tryAcquire} does.
   */
  @Test
  @DisplayName("R17.2 inspect() of an expired key is empty")
  void r17_2_expiredKeyIsFree() {
    requireInspection("R17.2");
    LockNode n = node();
    String key = key("r17.2");
    Duration ttl = ttl(Duration.ofMillis(300));
    assertThat(acquire(n, key, token(), ttl)).as("R17.2: tryAcquire of a fresh key").isTrue();
    sleepPastExpiry(System.nanoTime(), ttl);
    assertThat(inspect(n, key)).as("R17.2: inspect() of a key whose TTL ran out").isEmpty();
  }

  /**
   * R17.3: {@code inspect} refuses an empty key with {@link IllegalArgumentException} and throws
   * {@link IllegalStateException} naming the node after close.
   *
   * <p>If this fails, check the key and the closed flag first, as the other calls do.
   */
  @Test
  @DisplayName("R17.3 inspect() checks its key and refuses after close")
  void r17_3_inspectChecksArguments() {
    requireInspection("R17.3");
    assertThat(thrownByCall(() -> node().inspect("")))
        .as("R17.3: inspect(\"\")")
        .isInstanceOf(IllegalArgumentException.class);
    LockNode n = newNode();
    String name = n.name();
    closeByKit(n);
    assertThat(thrownByCall(() -> n.inspect(key("r17.3"))))
        .as("R17.3: inspect() after close")
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(name);
  }

  private Optional<KeyHolder> inspect(LockNode n, String key) {
    return await(n.inspect(key), "inspect");
  }
}
