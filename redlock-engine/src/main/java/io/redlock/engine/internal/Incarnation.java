package io.redlock.engine.internal;

import io.redlock.spi.NodeStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the engine knows about one node's incarnation, for restart quarantine: which incarnation it
 * last saw, since when that incarnation has been up (on this JVM's ticker), and whether its lock
 * state is durable.
 *
 * <p>The start of an incarnation is estimated as {@code now - uptime} when a status is read. Since
 * the SPI rounds uptime down, the estimate is never earlier than the truth. When the incarnation
 * changes, the restart happened after the engine last saw the old one, so the estimate is also
 * never earlier than that: a store that reports a wrong (too long) uptime after a restart is still
 * kept out for the full quarantine from the moment the engine could have noticed.
 *
 * <p>Thread-safe; one instance per node, shared by every acquisition.
 */
final class Incarnation {
  private static final Logger LOG = LoggerFactory.getLogger(Incarnation.class);

  private final String name;
  private final long quarantineNanos;

  // All guarded by this.
  private String incarnation;
  private long startedAt;
  private long lastSeen;
  private boolean durable;
  private boolean restartSeen;
  private boolean quarantined;
  private String problem;

  Incarnation(String name, long quarantineNanos) {
    this.name = name;
    this.quarantineNanos = quarantineNanos;
  }

  /**
   * Records a status read at {@code now} (after the node's vote was awaited) and judges a vote that
   * was sent at {@code sentAt}.
   *
   * @return by how many nanoseconds the node's incarnation was too young for its vote to count at
   *     {@code sentAt}; zero or less means the vote counts
   */
  synchronized long observe(NodeStatus status, long now, long sentAt) {
    long uptime = Timing.saturatedNanos(status.uptime());
    long estimate = now - uptime;
    String seen = status.incarnation();
    if (incarnation == null) {
      startedAt = estimate;
    } else if (!incarnation.equals(seen)) {
      // It restarted after we last saw the old incarnation, whatever its uptime says.
      long previous = lastSeen;
      startedAt = estimate - previous > 0 ? estimate : previous;
      restartSeen = true;
      LOG.warn(
          "{} restarted (incarnation {} -> {}, up {} ms, lock state {})",
          name,
          incarnation,
          seen,
          uptime / 1_000_000,
          status.durable() ? "durable" : "NOT durable: restart quarantine applies");
    } else if (estimate - startedAt > 0) {
      startedAt = estimate; // a later estimate of the same start is the safer one
    }
    incarnation = seen;
    durable = status.durable();
    lastSeen = now;
    problem = null;
    long shortBy = durable ? 0 : quarantineNanos - (sentAt - startedAt);
    boolean nowQuarantined = shortBy > 0;
    if (nowQuarantined != quarantined) {
      quarantined = nowQuarantined;
      if (nowQuarantined) {
        LOG.warn(
            "{} is in restart quarantine: its lock state is not durable and it has been up only"
                + " {} ms; its votes count again in {} ms",
            name,
            Math.max(0, sentAt - startedAt) / 1_000_000,
            shortBy / 1_000_000);
      } else {
        LOG.info("{} left restart quarantine: its votes count again", name);
      }
    }
    return shortBy;
  }

  /** Records that the node's status could not be read; its vote does not count. */
  synchronized void statusFailed(RuntimeException failure) {
    problem = failure.getMessage();
    LOG.debug("{}: status could not be read, its vote does not count: {}", name, problem);
  }

  /** Why the node's last vote did not count, in words, for messages. */
  synchronized String whyNotCounted(long sentAt) {
    if (problem != null) {
      return name + " (its status could not be read: " + problem + ")";
    }
    long up = Math.max(0, (sentAt - startedAt) / 1_000_000);
    return name
        + " ("
        + (restartSeen ? "restarted" : "started")
        + " without durable lock state, up "
        + up
        + " ms of the "
        + quarantineNanos / 1_000_000
        + " ms quarantine)";
  }
}
