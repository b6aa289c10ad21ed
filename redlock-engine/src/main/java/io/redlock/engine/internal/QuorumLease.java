package io.redlock.engine.internal;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.LeaseLostException;
import io.redlock.NodeFailure;
import io.redlock.ReleaseOutcome;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
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

  private final QuorumRedlock redlock;
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

  /** Records who granted and who failed, before activation. */
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
    boolean[] g = granted;
    if (g == null) {
      return List.of();
    }
    List<String> out = new ArrayList<>(g.length);
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
    return f.stream().sorted(Comparator.comparingInt(x -> order.indexOf(x.node()))).toList();
  }

  @Override
  public Duration remainingValidity() {
    if (state != ACTIVE) {
      return Duration.ZERO;
    }
    long left = validUntil - redlock.ticker.read();
    return left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
  }

  /** Validity left in nanoseconds, zero or less once out; for the renewal. */
  long leftNanos() {
    return state == ACTIVE ? validUntil - redlock.ticker.read() : 0;
  }

  @Override
  public boolean isValid() {
    return state == ACTIVE && validUntil - redlock.ticker.read() > 0;
  }

  @Override
  public int extensions() {
    return extensions;
  }

  // ---------------------------------------------------------------------------------------------
  // Extension

  /** What an extension found. */
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
    long ttlNanos = redlock.checkTtl(newTtl);
    lock.lock();
    try {
      checkExtensible();
      boolean extended = extendLocked(newTtl, ttlNanos).outcome == Extended.YES;
      if (redlock.listening.on) {
        redlock.listening.extension(resource, extended);
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

  /** An extension's outcome, and the tally behind it. */
  private record Extension(Extended outcome, Tally tally) {}

  /** Extends on every node; the caller holds the lock and checked that the lease is active. */
  private Extension extendLocked(Duration newTtl, long ttlNanos) {
    long start = redlock.ticker.read();
    long oldValidUntil = validUntil;
    long left = oldValidUntil - start;
    if (left <= 0) {
      LOG.debug("extend of '{}' refused: its validity has already run out", resource);
      return new Extension(Extended.FAILED, new Tally());
    }
    long driftNanos = redlock.driftNanos(newTtl);
    // Waiting beyond the current validity is pointless: a majority must answer before it.
    long deadline = start + Math.min(redlock.nodeTimeoutNanos(newTtl), left);
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
          redlock.quorum.size(),
          tally.quorumReached && !inTime ? " after the validity ran out" : "",
          redlock.quorum.quorum,
          redlock.quorum.inNodeOrder(tally.failed));
    }
    if (tally.no >= redlock.quorum.quorum) {
      lose(
          LeaseLost.Reason.TOKEN_GONE,
          tally.no
              + " of "
              + redlock.quorum.size()
              + " nodes answered that the key no longer holds this lease's token");
      return new Extension(Extended.TOKEN_GONE, tally);
    }
    return new Extension(Extended.FAILED, tally);
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
  public CompletableFuture<Boolean> extendAsync(Duration newTtl) {
    redlock.checkTtl(newTtl);
    return CompletableFuture.supplyAsync(() -> extend(newTtl), redlock.scheduler.executor());
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
      Renewal next = new Renewal(this, redlock, options, stopWhen);
      next.check(ttl);
      if (renewal != null) {
        renewal.stop();
      }
      renewal = next;
      if (!redlock.scheduler.watch(this)) {
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
      if (renewal != by || state != ACTIVE || redlock.scheduler.isClosed()) {
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
      Extension e = extendLocked(renewTtl, QuorumRedlock.saturatedNanos(renewTtl));
      if (redlock.listening.on) {
        redlock.listening.extension(resource, e.outcome == Extended.YES);
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
                + redlock.describeExtension(e.tally)
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
            redlock.scheduler.notifier());
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
          redlock.scheduler.watch(this);
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
    if (state == ACTIVE && validUntil - redlock.ticker.read() > 0) {
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
    redlock.scheduler.schedule(this::checkExpiry, Math.max(0, leftNanos()));
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
    redlock.scheduler.unwatch(this);
    LOG.warn("{}", l);
    if (redlock.listening.on) {
      redlock.listening.lost(l);
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
        redlock.scheduler.unwatch(this);
      }
      ReleaseOutcome outcome =
          redlock.quorum.releaseAll(resource, token, redlock.nodeTimeoutNanos(ttl), null, this);
      released = outcome;
      redlock.releasedLocally(resource); // waiters in this JVM need not wait for their next poll
      if (redlock.listening.on) {
        redlock.listening.released(resource, outcome);
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

  /** Checks the bound of {@link #releaseAwaitingLate}; in nanoseconds. */
  static long lateWaitNanos(Duration maxWait) {
    if (maxWait == null || maxWait.isNegative()) {
      throw new IllegalArgumentException(
          "maxWait must be zero or positive, got "
              + maxWait
              + "; pass how long to wait for late replies, e.g. Duration.ofSeconds(2)");
    }
    return QuorumRedlock.saturatedNanos(maxWait);
  }

  /** The calls of this lease given up on; made at the first. */
  LateCalls lateCalls() {
    LateCalls l = lateCalls;
    if (l == null) {
      synchronized (this) {
        l = lateCalls;
        if (l == null) {
          l = new LateCalls(redlock.quorum.size());
          lateCalls = l;
        }
      }
    }
    return l;
  }

  @Override
  public ReleaseOutcome releaseAwaitingLate(Duration maxWait) {
    long deadline = System.nanoTime() + lateWaitNanos(maxWait);
    ReleaseOutcome first = release();
    LateCalls late = lateCalls;
    if (late == null && first.complete()) {
      return first;
    }
    boolean[] stillLate = late == null ? new boolean[0] : late.awaitEnded(deadline);
    Quorum quorum = redlock.quorum;
    int n = quorum.size();
    boolean[] unsure = new boolean[n];
    boolean[] again = new boolean[n];
    boolean any = false;
    for (int i = 0; i < n; i++) {
      boolean acquireLate = late != null && late.lateAcquire(i);
      // A key may remain where the node granted or its grant may come late, and where the release
      // was not answered or an acquire was still under way.
      unsure[i] =
          (granted == null || granted[i] || acquireLate)
              && (acquireLate || first.failedNodes().contains(quorum.names[i]));
      // Once nothing of this lease is under way on the node, a release answered there is final.
      again[i] = unsure[i] && (late == null || !stillLate[i]);
      any |= again[i];
    }
    ReleaseOutcome second =
        any ? quorum.releaseAll(resource, token, redlock.nodeTimeoutNanos(ttl), again, null) : null;
    List<String> failed = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String name = quorum.names[i];
      if (unsure[i] && !(again[i] && !second.failedNodes().contains(name))) {
        failed.add(name);
      }
    }
    int answered = n - failed.size();
    int deleted = Math.min(answered, first.deleted() + (second == null ? 0 : second.deleted()));
    return new ReleaseOutcome(deleted, answered, n, failed);
  }

  @Override
  public CompletableFuture<ReleaseOutcome> releaseAsync() {
    return CompletableFuture.supplyAsync(this::release, redlock.scheduler.executor());
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
