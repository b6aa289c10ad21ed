package io.redlock.spi;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * What a node reports about its process, for restart quarantine and diagnostics.
 *
 * @param incarnation an identity that changes whenever the store restarts (Redis {@code run_id},
 *     PostgreSQL's postmaster start time...)
 * @param uptime how long this incarnation has been up, by the store's clock; rounded down, never up
 *     (restart quarantine counts on it being no longer than the truth)
 * @param durable true if the store keeps lock state across a restart (Redis AOF with {@code
 *     appendfsync always}, a logged PostgreSQL table with fsync on, journaled MongoDB writes); a
 *     store that is not durable forgets its locks when it restarts
 * @param details other facts worth showing a human (version, persistence settings); no secrets
 */
public record NodeStatus(
    String incarnation, Duration uptime, boolean durable, Map<String, String> details) {
  /** Validates and copies. */
  public NodeStatus {
    Objects.requireNonNull(incarnation, "incarnation");
    Objects.requireNonNull(uptime, "uptime");
    if (uptime.isNegative()) {
      throw new IllegalArgumentException("uptime must not be negative, got " + uptime);
    }
    details = Map.copyOf(details);
  }
}
