package io.redlock.tck;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A backdoor into the store under test: reads one key the way the server sees it, without going
 * through the {@link io.redlock.spi.LockNode} being tested. The compatibility kit uses it for the
 * rules that a node's own answers cannot show: that the stored token is byte-for-byte the one the
 * caller gave, and that the TTL runs on the server.
 *
 * <p>A backend author returns one from {@link LockNodeCompatibilityKit#keyInspector()}, typically a
 * raw driver query: {@code GET key} plus {@code PTTL key} for Redis, a {@code SELECT token,
 * expires_at - clock_timestamp()} for PostgreSQL. The kit asks for one at most once per test, uses
 * it from the test's own thread only (never from racing threads), and closes it at the end of the
 * test.
 */
@FunctionalInterface
public interface KeyInspector extends AutoCloseable {

  /**
   * Reads {@code key} on the server.
   *
   * @param key the key exactly as the kit passed it to the node (the inspector applies any prefix
   *     or encoding the backend adds)
   * @return the owner and remaining TTL, or empty if the key is absent or its expiry has passed on
   *     the server's clock (even if the store has not removed it yet)
   */
  Optional<KeyState> inspect(String key);

  /** Frees whatever the inspector holds (a connection, say). Does nothing by default. */
  @Override
  default void close() {}

  /**
   * One key as the server sees it.
   *
   * @param owner the token stored under the key, exactly as stored
   * @param remainingTtl the time left before the key expires, measured by the server's clock
   */
  record KeyState(String owner, Duration remainingTtl) {
    /** Validates. */
    public KeyState {
      Objects.requireNonNull(owner, "owner");
      Objects.requireNonNull(remainingTtl, "remainingTtl");
    }
  }
}
