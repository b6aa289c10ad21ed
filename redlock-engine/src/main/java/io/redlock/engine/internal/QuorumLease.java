package io.redlock.engine.internal;

import io.redlock.Lease;
import io.redlock.NodeFailure;
import io.redlock.ReleaseOutcome;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
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

  /** Ticker reading at which the acquisition began: the validity counts from it. */
  private final long startedAt;

  QuorumLease(QuorumRedlock redlock, String resource, String token, Duration ttl, long startedAt) {
    this.redlock = redlock;
    this.resource = resource;
    this.token = token;
    this.ttl = ttl;
    this.startedAt = startedAt;
  }

  long startedAt() {
    return startedAt;
  }

  /** Which nodes granted (a reference kept, not copied), and who failed; set once. */
  private boolean[] granted;

  private List<NodeFailure> failures;

  /** Records who granted and who failed, before activation. */
  void granted(boolean[] granted, List<NodeFailure> failures) {
    this.granted = granted;
    this.failures = failures;
  }

  @Override
  public List<String> grantedNodes() {
    boolean[] g = granted;
    if (g == null) {
      return List.of();
    }
    List<String> out = new java.util.ArrayList<>(g.length);
    for (int i = 0; i < g.length; i++) {
      if (g[i] && !quarantined.contains(redlock.quorum.names[i])) {
        out.add(redlock.quorum.names[i]);
      }
    }
    return List.copyOf(out);
  }

  @Override
  public List<NodeFailure> failedNodes() {
    List<NodeFailure> f = failures;
    if (f == null || f.isEmpty()) {
      return List.of();
    }
    List<String> order = redlock.quorum.nameList;
    return f.stream()
        .sorted(java.util.Comparator.comparingInt(x -> order.indexOf(x.node())))
        .toList();
  }

  /** Records what the safety round confirmed: the fencing token (0 if none), quarantined nodes. */
  void confirmed(long fence, List<String> quarantined) {
    this.fence = fence;
    this.quarantined = quarantined;
  }

  /** Activates the lease; the volatile write publishes the fields {@link #confirmed} set. */
  void activate(long validUntil) {
    this.validUntil = validUntil;
    this.state = ACTIVE;
  }

  boolean hasFence() {
    return fence != 0;
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

  private void checkExtensible() {
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
  }

  @Override
  public boolean extend(Duration newTtl) {
    long ttlNanos = redlock.checkTtl(newTtl);
    synchronized (lock) {
      checkExtensible();
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
      Tally tally = extendAll(newTtl, deadline);
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
              redlock.quorum.size(),
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
            redlock.quorum.size(),
            tally.quorumReached && !inTime ? " after the validity ran out" : "",
            redlock.quorum.quorum,
            redlock.quorum.inNodeOrder(tally.failed));
      }
      return false;
    }
  }

  /**
   * Compare-and-extend on every node, awaited until {@code deadline}: the tally's yes votes and
   * when they reached the quorum. With restart quarantine a node's yes counts only if its status,
   * asked right after the yes, passes.
   */
  private Tally extendAll(Duration newTtl, long deadline) {
    Quorum quorum = redlock.quorum;
    Safety safety = redlock.safety;
    boolean judged = safety != null && safety.quarantine();
    @SuppressWarnings({"unchecked", "rawtypes"}) // generic array creation
    Reply<NodeStatus>[] statuses = judged ? new Reply[quorum.size()] : null;
    long start = redlock.ticker.read();
    Tally tally = new Tally();
    quorum.fanOut.run(
        "extend",
        new FanOut.Policy<Boolean>() {
          @Override
          public Reply<Boolean> start(int node) {
            return quorum.nodes[node].extend(resource, token, newTtl);
          }

          @Override
          public void answered(int node, Boolean extended) {
            if (!Boolean.TRUE.equals(extended)) {
              tally.no++;
            } else if (judged) {
              statuses[node] = safety.startStatus(node);
            } else {
              tally.yes(quorum.quorum, redlock.ticker.read());
            }
          }

          @Override
          public void failed(int node, RuntimeException failure) {
            tally.fail(quorum.names[node], failure);
          }
          // a late "extended" only keeps our own key a little longer: nothing to undo
        },
        deadline);
    if (judged) {
      safety.judgeExtension(statuses, deadline, start, tally);
    }
    return tally;
  }

  @Override
  public ReleaseOutcome release() {
    synchronized (lock) {
      if (released != null) {
        return released;
      }
      // Mark first: a late "acquired" from the acquisition now releases itself.
      state = DONE;
      ReleaseOutcome outcome =
          redlock.quorum.releaseAll(resource, token, redlock.nodeTimeoutNanos(ttl));
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
