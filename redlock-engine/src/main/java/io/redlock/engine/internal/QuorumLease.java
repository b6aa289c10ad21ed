package io.redlock.engine.internal;

import io.redlock.Lease;
import io.redlock.ReleaseOutcome;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A lease held on a majority of nodes. Created at the start of each attempt (so late replies of a
 * failed attempt can see that it failed), it becomes active only when the attempt succeeds.
 *
 * <p>Thread-safe: extend and release are serialized on a lock (a release waits for a running
 * extension, at most one per-node timeout); the validity is one volatile ticker reading so that
 * readers never see half an update.
 */
final class QuorumLease implements Lease {
  private static final Logger LOG = LoggerFactory.getLogger(QuorumLease.class);

  private static final int PENDING = 0;
  private static final int ACTIVE = 1;

  /** The attempt failed, or the lease was released: late "acquired" answers must be released. */
  private static final int DONE = 2;

  private final QuorumRedlock redlock;
  private final String resource;
  private final String token;
  private final Object lock = new Object();

  private volatile int state = PENDING;

  /** Ticker reading at which the validity runs out; compared by subtraction (wrap-safe). */
  private volatile long validUntil;

  private volatile int extensions;

  /** The fencing token, or 0 when fencing is off; set once before the lease becomes active. */
  private long fence;

  /** Nodes that granted but were not counted (restart quarantine); set once with the fence. */
  private List<String> quarantined = List.of();

  /** The TTL last asked for; sets the per-node timeout of the release. Guarded by lock. */
  private Duration ttl;

  /** The first release's outcome, returned again by later calls. Guarded by lock. */
  private ReleaseOutcome released;

  QuorumLease(QuorumRedlock redlock, String resource, String token, Duration ttl) {
    this.redlock = redlock;
    this.resource = resource;
    this.token = token;
    this.ttl = ttl;
  }

  void activate(long validUntil) {
    this.validUntil = validUntil;
    this.state = ACTIVE;
  }

  /** Activates a lease of the safety path, with its fencing token (0 if none). */
  void activate(long validUntil, long fence, List<String> quarantined) {
    this.fence = fence;
    this.quarantined = quarantined;
    activate(validUntil); // the volatile write publishes the two fields above
  }

  void markDone() {
    state = DONE;
  }

  boolean isDone() {
    return state == DONE;
  }

  @Override
  public String resource() {
    return resource;
  }

  @Override
  public String token() {
    return token;
  }

  @Override
  public long fencingToken() {
    if (fence == 0) {
      throw new IllegalStateException(
          "the lease on '"
              + resource
              + "' has no fencing token: build the Redlock with Redlock.builder().fencing(true)");
    }
    return fence;
  }

  @Override
  public List<String> quarantinedNodes() {
    return quarantined;
  }

  @Override
  public Duration remainingValidity() {
    if (state != ACTIVE) {
      return Duration.ZERO;
    }
    long left = validUntil - redlock.ticker.read();
    return left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
  }

  @Override
  public boolean isValid() {
    return state == ACTIVE && validUntil - redlock.ticker.read() > 0;
  }

  @Override
  public int extensions() {
    return extensions;
  }

  @Override
  public boolean extend(Duration newTtl) {
    long ttlNanos = redlock.checkTtl(newTtl);
    synchronized (lock) {
      if (state != ACTIVE) {
        throw new IllegalStateException(
            "the lease on '"
                + resource
                + "' was released; acquire a new lease instead of extending this one");
      }
      int max = redlock.settings.maxExtensions();
      if (extensions >= max) {
        throw new IllegalStateException(
            "the lease on '"
                + resource
                + "' was already extended "
                + extensions
                + " times, the maximum (maxExtensions "
                + max
                + "); release it and acquire a new lease, or raise maxExtensions");
      }
      long start = redlock.ticker.read();
      long oldValidUntil = validUntil;
      long left = oldValidUntil - start;
      if (left <= 0) {
        LOG.debug("extend of '{}' refused: its validity has already run out", resource);
        return false;
      }
      long driftNanos = redlock.driftNanos(newTtl);
      long nodeTimeout = redlock.nodeTimeoutNanos(newTtl);
      // Waiting beyond the current validity is pointless: a majority must answer before it.
      long deadline = start + Math.min(nodeTimeout, left);
      Tally tally = new Tally();
      if (redlock.safety != null && redlock.safety.quarantine()) {
        redlock.safety.extendAll(resource, token, newTtl, deadline, tally);
      } else {
        redlock.extendAll(resource, token, newTtl, deadline, tally);
      }
      long end = redlock.ticker.read();
      // Every key this call extended expires no earlier than start + ttl on its node's clock.
      long newValidUntil = start + ttlNanos - driftNanos;
      boolean inTime = tally.quorumReached && tally.quorumAtNanos - oldValidUntil < 0;
      if (inTime && newValidUntil - end > 0 && !Thread.currentThread().isInterrupted()) {
        validUntil = newValidUntil;
        extensions++;
        ttl = newTtl;
        if (LOG.isDebugEnabled()) {
          LOG.debug(
              "extended '{}' on {} of {} nodes, validity {} ms",
              resource,
              tally.yes,
              redlock.nodes.length,
              (newValidUntil - end) / 1_000_000);
        }
        return true;
      }
      if (newValidUntil - oldValidUntil < 0) {
        // A shorter TTL may have landed on nodes whose answers were late, lost or not counted
        // (timeout, interrupt, quarantine): the old validity could overstate what they hold.
        validUntil = newValidUntil;
      }
      if (LOG.isDebugEnabled()) {
        LOG.debug(
            "extend of '{}' failed: {} of {} nodes agreed{}, quorum {}; unreachable: {}",
            resource,
            tally.yes,
            redlock.nodes.length,
            tally.quorumReached && !inTime ? " after the validity ran out" : "",
            redlock.quorum,
            redlock.inNodeOrder(tally.failed));
      }
      return false;
    }
  }

  @Override
  public ReleaseOutcome release() {
    synchronized (lock) {
      if (released != null) {
        return released;
      }
      // Mark first: a late "acquired" from the acquisition now releases itself.
      state = DONE;
      ReleaseOutcome outcome = redlock.releaseAll(resource, token, redlock.nodeTimeoutNanos(ttl));
      released = outcome;
      redlock.releasedLocally(resource); // waiters in this JVM need not wait for their next poll
      if (LOG.isDebugEnabled()) {
        LOG.debug(
            "released '{}': deleted on {}, answered {} of {}{}",
            resource,
            outcome.deleted(),
            outcome.answered(),
            outcome.nodes(),
            outcome.failedNodes().isEmpty() ? "" : "; unreachable: " + outcome.failedNodes());
      }
      return outcome;
    }
  }

  @Override
  public void close() {
    release();
  }

  @Override
  public String toString() {
    return "Lease['"
        + resource
        + "', "
        + (state == ACTIVE ? remainingValidity().toMillis() + " ms left" : "released")
        + (fence != 0 ? ", fencing token " + fence : "")
        + (quarantined.isEmpty() ? "" : ", quarantined (not counted): " + quarantined)
        + "]";
  }
}
