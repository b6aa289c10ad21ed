package io.redlock.engine.internal;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.LeaseLostException;
import io.redlock.NodeFailure;
import io.redlock.ReleaseOutcome;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A lease held on a majority of nodes. Created at the start of each attempt (so late replies of a
 * failed attempt can see that it failed), it becomes active only when the attempt succeeds.
 *
 * <p>Thread-safe: extend, renewal and release are serialized on a lock (a release waits for a
 * running extension, at most one per-node timeout), so once {@link #release()} returns no extension
 * is sent. The lock is a {@link ReentrantLock}, not a monitor, so that a virtual thread blocked in
 * a fan-out under it does not pin its carrier. The validity is one volatile ticker reading.
 *
 * <p>What a lease needs only when it is kept alive or watched for loss (the renewal, the loss
 * future) is made then: a plain acquire and release allocates none of it.
 */
final class QuorumLease implements Lease {
  private static final Logger LOG = LoggerFactory.getLogger(QuorumLease.class);

  private static final int PENDING = 0;
  private static final int ACTIVE = 1;

  /**
   * The attempt failed, the lease was released or lost: late "acquired" answers must be released.
   */
  private static final int DONE = 2;

  private final Leasing leasing;
  private final String resource;
  private final String token;
  private final ReentrantLock lock = new ReentrantLock();

  /** Ticker reading at which the acquisition began: the validity counts from it. */
  private final long startedAt;

  private volatile int state = PENDING;

  /** Ticker reading at which the validity runs out; compared by subtraction (wrap-safe). */
  private volatile long validUntil;

  private volatile int extensions;

  /** The fencing token, or 0 when fencing is off; set once before the lease becomes active. */
  private long fence;

  /** Nodes that granted but were not counted (restart quarantine); set once with the fence. */
  private List<String> quarantined = List.of();

  /** Which nodes granted (a reference kept, not copied), and who failed; set once. */
  private boolean[] granted;

  private List<NodeFailure> failures;

  /** The TTL last asked for; sets the per-node timeout of the release. Guarded by lock. */
  private Duration ttl;

  /** The first release's outcome, returned again by later calls. Guarded by lock. */
  private ReleaseOutcome released;

  /** The calls of this lease given up on, made when the first one is. */
  private volatile LateCalls lateCalls;

  /** Why the lease was lost, once it was. */
  private volatile LeaseLost lost;

  /** Completed with {@link #lost}; made by the first who asks. Guarded by lock. */
  private CompletableFuture<LeaseLost> lostFuture;

  /** The renewal in force, if the lease is kept alive. Guarded by lock. */
  private Renewal renewal;

  /** Whether a check at the end of the validity is scheduled. Guarded by lock. */
  private boolean expiryWatched;

  QuorumLease(Leasing leasing, String resource, String token, Duration ttl, long startedAt) {
    this.leasing = leasing;
    this.resource = resource;
    this.token = token;
    this.ttl = ttl;
    this.startedAt = startedAt;
  }

  long startedAt() {
    return startedAt;
  }

  void granted(boolean[] granted, List<NodeFailure> failures) {
    this.granted = granted;
    this.failures = failures;
  }

  /** Records what the safety round confirmed: the fencing token (0 if none), quarantined nodes. */
  void confirmed(long fence, List<String> quarantined) {
    this.fence = fence;
    this.quarantined = quarantined;
  }

  /** Activates the lease; the volatile write publishes the fields set before. */
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
              + "' has no fencing token: build the Redlock with Redlock.builder().fencing(true)"
              + " (a lease taken over with resume() does not know its fencing token)");
    }
    return fence;
  }

  @Override
  public List<String> quarantinedNodes() {
    return quarantined;
  }

  @Override
  public List<String> grantedNodes() {
    return granted == null ? List.of() : leasing.quorum.namesOf(granted, quarantined);
  }

  @Override
  public List<NodeFailure> failedNodes() {
    return leasing.quorum.sortedFailures(failures);
  }

  @Override
  public Duration remainingValidity() {
    if (state != ACTIVE) {
      return Duration.ZERO;
    }
    long left = validUntil - leasing.ticker.read();
    return left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
  }

  /** Validity left in nanoseconds, zero or less once out; for the renewal. */
  long leftNanos() {
    return state == ACTIVE ? validUntil - leasing.ticker.read() : 0;
  }

  @Override
  public boolean isValid() {
    return state == ACTIVE && validUntil - leasing.ticker.read() > 0;
  }

  @Override
  public int extensions() {
    return extensions;
  }

  // ---------------------------------------------------------------------------------------------
  // Extension

  enum Extended {
    /** A majority extended in time: the validity was recomputed. */
    YES,
    /** A majority answered that the key no longer holds this token: the lease is lost. */
    TOKEN_GONE,
    /** Too few answered in time (down, slow): the old validity stands. */
    FAILED
  }

  @Override
  public boolean extend(Duration newTtl) {
    long ttlNanos = leasing.timing.checkTtl(newTtl);
    lock.lock();
    try {
      checkExtensible();
      boolean extended = extendLocked(newTtl, ttlNanos).outcome == Extended.YES;
      if (leasing.listening.on) {
        leasing.listening.extension(resource, extended);
      }
      return extended;
    } finally {
      lock.unlock();
    }
  }

  private void checkExtensible() {
    if (state != ACTIVE) {
      throw new IllegalStateException(
          "the lease on '"
              + resource
              + "' was "
              + (lost != null ? "lost (" + lost.reason() + ")" : "released")
              + "; acquire a new lease instead of extending this one");
    }
    int max = leasing.timing.settings.maxExtensions();
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

  private record Extension(Extended outcome, Tally tally) {}

  /** Extends on every node; the caller holds the lock and checked that the lease is active. */
  private Extension extendLocked(Duration newTtl, long ttlNanos) {
    long start = leasing.ticker.read();
    long oldValidUntil = validUntil;
    long left = oldValidUntil - start;
    if (left <= 0) {
      LOG.debug("extend of '{}' refused: its validity has already run out", resource);
      return new Extension(Extended.FAILED, new Tally());
    }
    long driftNanos = leasing.timing.driftNanos(newTtl);
    // Waiting beyond the current validity is pointless: a majority must answer before it.
    long deadline = start + Math.min(leasing.timing.nodeTimeoutNanos(newTtl), left);
    Tally tally = leasing.extendAll(resource, token, newTtl, deadline);
    long end = leasing.ticker.read();
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
            leasing.quorum.size(),
            (newValidUntil - end) / 1_000_000);
      }
      return new Extension(Extended.YES, tally);
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
          leasing.quorum.size(),
          tally.quorumReached && !inTime ? " after the validity ran out" : "",
          leasing.quorum.quorum,
          leasing.quorum.inNodeOrder(tally.failed));
    }
    if (tally.no >= leasing.quorum.quorum) {
      lose(
          LeaseLost.Reason.TOKEN_GONE,
          tally.no
              + " of "
              + leasing.quorum.size()
              + " nodes answered that the key no longer holds this lease's token");
      return new Extension(Extended.TOKEN_GONE, tally);
    }
    return new Extension(Extended.FAILED, tally);
  }

  @Override
  public CompletableFuture<Boolean> extendAsync(Duration newTtl) {
    leasing.timing.checkTtl(newTtl);
    return CompletableFuture.supplyAsync(() -> extend(newTtl), leasing.scheduler.executor());
  }

  // ---------------------------------------------------------------------------------------------
  // Keep-alive

  @Override
  public Lease keepAlive(KeepAlive options) {
    return keepAlive(options, null);
  }

  /** Keeps the lease alive until {@code stopWhen} (if given) says why not (non-null). */
  Lease keepAlive(KeepAlive options, java.util.function.Supplier<String> stopWhen) {
    java.util.Objects.requireNonNull(options, "options must not be null");
    lock.lock();
    try {
      if (state != ACTIVE) {
        throw new IllegalStateException(
            "the lease on '"
                + resource
                + "' is "
                + (lost != null ? "lost (" + lost.reason() + ")" : "released or out")
                + "; keep alive only a lease that is held");
      }
      Renewal next = new Renewal(this, leasing, options, stopWhen);
      next.check(ttl);
      if (renewal != null) {
        renewal.stop();
      }
      renewal = next;
      if (!leasing.scheduler.watch(this)) {
        throw new IllegalStateException("this Redlock is closed; its leases cannot be kept alive");
      }
      renewal.scheduleIn(renewal.nextNanos(ttl, leftNanos()));
    } finally {
      lock.unlock();
    }
    return this;
  }

  /**
   * One renewal step, on the scheduler: extends unless something says stop, and answers when to run
   * again (nanoseconds), or -1 to stop.
   */
  long renew(Renewal by) {
    lock.lock();
    try {
      if (renewal != by || state != ACTIVE || leasing.scheduler.isClosed()) {
        return -1;
      }
      String stop = by.stopReason(this);
      if (stop != null) {
        LOG.info("keep-alive of '{}' stops: {}; the lease runs out on its own", resource, stop);
        renewal = null;
        watchExpiryLocked();
        return -1;
      }
      Duration renewTtl = ttl;
      Extension e = extendLocked(renewTtl, Timing.saturatedNanos(renewTtl));
      if (leasing.listening.on) {
        leasing.listening.extension(resource, e.outcome == Extended.YES);
      }
      if (e.outcome == Extended.YES) {
        return by.nextNanos(renewTtl, leftNanos());
      }
      if (e.outcome == Extended.TOKEN_GONE) {
        return -1; // lost: extendLocked said so
      }
      long left = leftNanos();
      long margin = by.marginNanos(renewTtl);
      if (left <= margin) {
        lose(
            LeaseLost.Reason.UNREACHABLE,
            "extensions kept failing ("
                + e.tally.describeExtension(leasing.quorum)
                + ") and only "
                + Math.max(0, left) / 1_000_000
                + " ms of validity were left, less than the "
                + margin / 1_000_000
                + " ms margin");
        return -1;
      }
      // Retry soon, and once more right at the margin, so that a loss is told in time.
      return by.nextNanos(renewTtl, left);
    } finally {
      lock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Loss

  @Override
  public void onLost(Consumer<LeaseLost> listener) {
    java.util.Objects.requireNonNull(listener, "listener must not be null");
    whenLost()
        .thenAcceptAsync(
            lostNow -> {
              try {
                listener.accept(lostNow);
              } catch (RuntimeException e) {
                LOG.warn("a loss listener of the lease on '{}' failed", resource, e);
              }
            },
            leasing.scheduler.notifier());
  }

  @Override
  public CompletionStage<LeaseLost> whenLost() {
    lock.lock();
    try {
      if (lostFuture == null) {
        lostFuture = new CompletableFuture<>();
        if (lost != null) {
          lostFuture.complete(lost);
        } else if (state == ACTIVE) {
          leasing.scheduler.watch(this);
          watchExpiryLocked();
        }
      }
      return lostFuture.minimalCompletionStage();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void checkValid() {
    LeaseLost l = lost;
    if (l != null) {
      throw new LeaseLostException(l);
    }
    if (state == ACTIVE && validUntil - leasing.ticker.read() > 0) {
      return;
    }
    throw new LeaseLostException(
        state == ACTIVE
            ? new LeaseLost(resource, LeaseLost.Reason.EXPIRED, "its validity ran out")
            : new LeaseLost(resource, LeaseLost.Reason.RELEASED, "it was released"));
  }

  /** Schedules a check at the end of the validity; the caller holds the lock. */
  private void watchExpiryLocked() {
    if (expiryWatched || renewal != null) {
      return; // a renewal watches the validity itself
    }
    expiryWatched = true;
    leasing.scheduler.schedule(this::checkExpiry, Math.max(0, leftNanos()));
  }

  private void checkExpiry() {
    lock.lock();
    try {
      expiryWatched = false;
      if (state != ACTIVE || renewal != null) {
        return;
      }
      long left = leftNanos();
      if (left > 0) {
        watchExpiryLocked(); // extended meanwhile
        return;
      }
      lose(LeaseLost.Reason.EXPIRED, "its validity ran out before an extension succeeded");
    } finally {
      lock.unlock();
    }
  }

  /** The Redlock closed while this lease was watched. */
  void redlockClosed() {
    lock.lock();
    try {
      if (state == ACTIVE) {
        lose(LeaseLost.Reason.CLOSED, "the Redlock was closed while the lease was held");
      }
    } finally {
      lock.unlock();
    }
  }

  /** Marks the lease lost, once, and tells whoever listens; the caller holds the lock. */
  private void lose(LeaseLost.Reason reason, String detail) {
    if (lost != null || state != ACTIVE) {
      return;
    }
    LeaseLost l = new LeaseLost(resource, reason, detail);
    lost = l;
    state = DONE; // not valid any more; a release still cleans up the nodes
    if (renewal != null) {
      renewal.stop();
      renewal = null;
    }
    leasing.scheduler.unwatch(this);
    LOG.warn("{}", l);
    if (leasing.listening.on) {
      leasing.listening.lost(l);
    }
    if (lostFuture != null) {
      lostFuture.complete(l);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Release

  @Override
  public ReleaseOutcome release() {
    lock.lock();
    try {
      if (released != null) {
        return released;
      }
      // Mark first: a late "acquired" from the acquisition now releases itself.
      state = DONE;
      if (renewal != null) {
        renewal.stop();
        renewal = null;
      }
      if (lostFuture != null || lost != null) {
        leasing.scheduler.unwatch(this);
      }
      ReleaseOutcome outcome =
          leasing.quorum.releaseAll(
              resource, token, leasing.timing.nodeTimeoutNanos(ttl), null, this);
      released = outcome;
      leasing.releasedLocally(resource); // waiters in this JVM need not wait for their next poll
      if (leasing.listening.on) {
        leasing.listening.released(resource, outcome);
      }
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
    } finally {
      lock.unlock();
    }
  }

  synchronized LateCalls lateCalls() {
    if (lateCalls == null) {
      lateCalls = new LateCalls(leasing.quorum.size());
    }
    return lateCalls;
  }

  @Override
  public ReleaseOutcome releaseAwaitingLate(Duration maxWait) {
    long deadline = System.nanoTime() + Timing.checkLateWait(maxWait);
    ReleaseOutcome first = release();
    if (lateCalls == null && first.complete()) {
      return first;
    }
    long timeout = leasing.timing.nodeTimeoutNanos(ttl);
    return lateCalls()
        .sweep(
            leasing.quorum.names,
            granted,
            first,
            deadline,
            leasing.quorum.states.down(),
            again -> leasing.quorum.releaseAll(resource, token, timeout, again, null));
  }

  @Override
  public CompletableFuture<ReleaseOutcome> releaseAsync() {
    return CompletableFuture.supplyAsync(this::release, leasing.scheduler.executor());
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
        + (state == ACTIVE
            ? remainingValidity().toMillis() + " ms left"
            : lost != null ? "lost (" + lost.reason() + ")" : "released")
        + (fence != 0 ? ", fencing token " + fence : "")
        + (quarantined.isEmpty() ? "" : ", quarantined (not counted): " + quarantined)
        + "]";
  }
}
