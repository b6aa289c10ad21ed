package io.redlock.engine.internal;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.NodeFailure;
import io.redlock.NodeHealth;
import io.redlock.NodesMisconfiguredException;
import io.redlock.Redlock;
import io.redlock.RedlockListener;
import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeUri;
import io.redlock.spi.ReleaseSubscription;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Redlock over N nodes, as the Redis distributed-lock page describes it: one fresh token per
 * attempt, the call started on every node before any reply is awaited (so a backend may multiplex),
 * one shared deadline for the replies, a strict majority, validity = TTL - elapsed - drift, release
 * on every node after a failed attempt, random pauses between attempts.
 *
 * <p>Runs on the calling thread only; backends that block bring their own executor ({@link
 * io.redlock.spi.support.Replies#supplyAsync}). Elapsed time comes from the injected {@link
 * Ticker}, never wall time.
 */
final class QuorumRedlock implements Redlock {
  private static final Logger LOG = LoggerFactory.getLogger(QuorumRedlock.class);

  /** 160 bits, the size the Redis distributed-lock page assumes ("20 bytes from /dev/urandom"). */
  static final int TOKEN_BYTES = 20;

  /** One generator for every token: seeding a SecureRandom per call would be slow. */
  private static final SecureRandom TOKENS = new SecureRandom();

  private static final Base64.Encoder TOKEN_ENCODER = Base64.getUrlEncoder().withoutPadding();

  private static final int TOKENS_PER_FETCH = 32;

  private static final ThreadLocal<TokenBytes> TOKEN_BYTES_OF_THREAD =
      ThreadLocal.withInitial(TokenBytes::new);

  /** The answer handler for replies nobody needs any more (fire-and-forget). */
  static final Consumer<Object> IGNORE = answer -> {};

  /** Thread-safe without sharing state between threads, unlike a shared java.util.Random. */
  private static final RandomGenerator THREAD_LOCAL_RANDOM =
      () -> ThreadLocalRandom.current().nextLong();

  /** The nodes, their names and majority, the fan-out and the nodes' health. */
  final Quorum quorum;

  /** The listener, if any. */
  final Listening listening;

  private final LockNode[] nodes;
  private final String[] names;

  /** Which nodes declare release notifications ({@link LockNode#onRelease}). */
  private final boolean[] notifies;

  private final List<String> nameList;
  final RedlockSettings settings;
  final Ticker ticker;
  private final Sleeper sleeper;
  private final RandomGenerator random;

  /** The coarsest TTL precision among the nodes: a TTL must suit every node. */
  private final Duration ttlPrecision;

  /** {@link #ttlPrecision} in nanoseconds, discounted from every validity. */
  private final long precisionNanos;

  /** Validity a fresh lease needs: the configured minimum, and always more than zero. */
  private final long minValidityNanos;

  private final AtomicBoolean closed = new AtomicBoolean();

  /** Fencing and restart quarantine, or null when neither is on (the one-round plain path). */
  final Safety safety;

  /** Threads for keep-alive, loss detection and async calls, started at first use. */
  final Scheduler scheduler =
      new Scheduler(Math.max(2, Runtime.getRuntime().availableProcessors()));

  /** Timings derived from the TTL used last; see {@link TtlTiming}. */
  private volatile TtlTiming lastTiming;

  QuorumRedlock(List<LockNode> nodes, RedlockSettings settings, Ticker ticker) {
    this(nodes, settings, ticker, RedlockListener.NONE);
  }

  QuorumRedlock(
      List<LockNode> nodes, RedlockSettings settings, Ticker ticker, RedlockListener listener) {
    this(nodes, settings, ticker, Sleeper.SYSTEM, THREAD_LOCAL_RANDOM, true, listener);
  }

  /**
   * For tests: a fake ticker, a sleeper that moves it, a seeded random source, and whether to run
   * the {@link BuildChecks} (their status calls would move a fake ticker behind the test's back).
   */
  QuorumRedlock(
      List<LockNode> nodes,
      RedlockSettings settings,
      Ticker ticker,
      Sleeper sleeper,
      RandomGenerator random,
      boolean checkNodes) {
    this(nodes, settings, ticker, sleeper, random, checkNodes, RedlockListener.NONE);
  }

  /** The full constructor: the others pass defaults. */
  QuorumRedlock(
      List<LockNode> nodes,
      RedlockSettings settings,
      Ticker ticker,
      Sleeper sleeper,
      RandomGenerator random,
      boolean checkNodes,
      RedlockListener listener) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
    this.random = Objects.requireNonNull(random, "random");
    LockNode[] nodeArray = nodes.toArray(new LockNode[0]);
    this.nodes = nodeArray;
    if (nodeArray.length == 0) {
      throw new IllegalArgumentException("a Redlock needs at least one node");
    }
    this.names = new String[this.nodes.length];
    this.notifies = new boolean[this.nodes.length];
    Duration precision = Duration.ofNanos(1);
    Set<LockNode> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    Set<String> seenNames = new HashSet<>();
    for (int i = 0; i < this.nodes.length; i++) {
      LockNode node = Objects.requireNonNull(this.nodes[i], "node must not be null");
      String name = NodeUri.redact(String.valueOf(node.name()));
      // The same store counted twice would let one store's vote count as two: a broken quorum.
      if (!seen.add(node) || !seenNames.add(name)) {
        throw new IllegalArgumentException(
            "node '"
                + name
                + "' is listed twice; every node of a Redlock must be a separate, independent store");
      }
      names[i] = name;
      notifies[i] = node.capabilities().releaseNotifications();
      Duration p = node.capabilities().ttlPrecision();
      if (p.compareTo(precision) > 0) {
        precision = p;
      }
    }
    this.listening = new Listening(Objects.requireNonNull(listener, "listener"));
    this.quorum = new Quorum(nodeArray, names, ticker, listening);
    this.nameList = quorum.nameList;
    this.ttlPrecision = precision;
    this.precisionNanos = saturatedNanos(precision);
    this.minValidityNanos = Math.max(1, saturatedNanos(settings.minValidity()));
    this.safety = Safety.create(quorum, settings);
    if (checkNodes) {
      try {
        BuildChecks.run(quorum, settings);
      } catch (RuntimeException | Error e) {
        scheduler.close();
        quorum.background.close(); // the nodes stay open: they are the caller's to close
        throw e;
      }
    }
    if (LOG.isDebugEnabled()) {
      LOG.debug("Redlock over {} nodes (quorum {}): {}", names.length, quorum.quorum, nameList);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Acquisition

  @Override
  public Optional<Lease> tryAcquire(String resource, Duration ttl) {
    checkResource(resource);
    long ttlNanos = checkTtl(ttl);
    checkOpen();
    Tally tally = new Tally();
    if (!listening.on) {
      return tryAcquire(resource, ttl, ttlNanos, tally);
    }
    long began = ticker.read();
    boolean acquired = false;
    try {
      Optional<Lease> lease = tryAcquire(resource, ttl, ttlNanos, tally);
      acquired = lease.isPresent();
      return lease;
    } finally {
      listening.acquisition(resource, acquired, tally.attempts, ticker.read() - began);
    }
  }

  private Optional<Lease> tryAcquire(String resource, Duration ttl, long ttlNanos, Tally tally) {
    long driftNanos = driftNanos(ttl);
    long nodeTimeoutNanos = nodeTimeoutNanos(ttl);
    int attempts = settings.retryAttempts();
    if (Thread.currentThread().isInterrupted()) {
      LOG.debug("tryAcquire '{}' not attempted: the thread is interrupted", resource);
      return Optional.empty();
    }
    for (int attempt = 1; ; attempt++) {
      QuorumLease lease = attempt(resource, ttl, ttlNanos, driftNanos, nodeTimeoutNanos, tally);
      if (lease != null) {
        return Optional.of(lease);
      }
      if (Thread.currentThread().isInterrupted()) {
        // The failed attempt has already released what it took; keep the flag for the caller.
        LOG.debug("tryAcquire '{}' stopped: the thread was interrupted", resource);
        return Optional.empty();
      }
      if (attempt >= attempts) {
        if (LOG.isDebugEnabled()) {
          LOG.debug(
              "could not lock '{}' in {} attempts: {}", resource, attempts, describe(tally, ttl));
        }
        return Optional.empty();
      }
      try {
        sleeper.sleep(pickPauseNanos());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        LOG.debug("tryAcquire '{}' interrupted while pausing between attempts", resource);
        return Optional.empty();
      }
    }
  }

  @Override
  public Lease acquire(String resource, Duration ttl, Duration maxWait)
      throws InterruptedException {
    checkResource(resource);
    long ttlNanos = checkTtl(ttl);
    long maxWaitNanos = checkMaxWait(maxWait);
    checkOpen();
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted before trying to lock '" + resource + "'");
    }
    Tally tally = new Tally();
    if (!listening.on) {
      return acquire(resource, ttl, ttlNanos, maxWaitNanos, tally);
    }
    long began = ticker.read();
    boolean acquired = false;
    try {
      Lease lease = acquire(resource, ttl, ttlNanos, maxWaitNanos, tally);
      acquired = true;
      return lease;
    } finally {
      listening.acquisition(resource, acquired, tally.attempts, ticker.read() - began);
    }
  }

  private Lease acquire(
      String resource, Duration ttl, long ttlNanos, long maxWaitNanos, Tally tally)
      throws InterruptedException {
    long driftNanos = driftNanos(ttl);
    long nodeTimeoutNanos = nodeTimeoutNanos(ttl);
    long start = ticker.read();
    Retries retries = new Retries(resource);
    try {
      for (int attempt = 1; ; attempt++) {
        retries.attempting();
        QuorumLease lease = attempt(resource, ttl, ttlNanos, driftNanos, nodeTimeoutNanos, tally);
        if (lease != null) {
          retries.acquired = true;
          return lease;
        }
        // Before the exits below: a release noted during the attempt is passed on if we leave.
        boolean splitVote = retries.failed(tally);
        if (Thread.interrupted()) {
          // The failed attempt has already released what it took.
          throw new InterruptedException(
              "interrupted while trying to lock '" + resource + "'; nothing is held");
        }
        long waited = ticker.read() - start;
        long left = maxWaitNanos - waited;
        if (left <= 0) {
          throw timeout(resource, ttl, waited, attempt, tally);
        }
        retries.pause(tally, splitVote, left);
      }
    } finally {
      retries.stop(ttlNanos);
    }
  }

  /** The waiting of one {@link #acquire} between its attempts. */
  private final class Retries {
    private final String resource;

    /** Made after the first failed attempt only: an uncontended acquire registers nothing. */
    private WaitQueue.Waiter waiter;

    boolean acquired;

    /** The last pause ended on a release. */
    private boolean woken;

    private int quickRetries;

    Retries(String resource) {
      this.resource = resource;
    }

    void attempting() {
      if (waiter != null) {
        waiter.attempting(); // a release from now on is kept for after this attempt
      }
    }

    /** Whether the failed attempt split the votes while a release was reported meanwhile. */
    boolean failed(Tally tally) {
      return waiter != null && waiter.failed(tally, quorum.quorum);
    }

    /** Pauses before the next attempt, at most {@code left}. */
    void pause(Tally tally, boolean splitVote, long left) throws InterruptedException {
      if (waiter == null) {
        waiter = startWaiting(resource, tally);
        subscribeIfFirst(waiter);
      }
      if (splitVote) {
        // The votes were split (some nodes held elsewhere, too few for anyone to have won) and a
        // release was reported meanwhile: the other contenders, waiters of other processes (this
        // JVM wakes one waiter per resource), are retrying now too and would split the votes
        // again; retry after a random 0-2 ms instead. Any other wake retries at once: a jitter
        // after every wake mostly handed the lock back to the thread that had just released it.
        long jitter = Math.min(pickJitterNanos(), left);
        if (jitter > 0) {
          sleeper.sleep(jitter);
        }
        return;
      }
      // A release reaches the nodes one by one, and only some may notify: an attempt woken by the
      // first report can still find the others held, and nobody reports those releases if their
      // nodes do not notify. So after a woken attempt fails, retry a few times after short pauses
      // (1, 2, 4 ms; a report still cuts them short) before polling again.
      long pause;
      if (woken && quickRetries < QUICK_RETRIES) {
        pause = QUICK_RETRY_NANOS << quickRetries;
        quickRetries++;
      } else {
        pause = pickPauseNanos();
        quickRetries = 0;
      }
      // Never pause past the deadline; an attempt at the deadline is the caller's last chance.
      woken = sleeper.await(waiter.wakeup, Math.min(pause, left));
    }

    void stop(long ttlNanos) {
      if (waiter != null) {
        stopWaiting(waiter, acquired, ttlNanos);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Release notifications: a waiter retries as soon as the resource is released

  /** Short retries after an attempt woken by a release failed, and the first one's pause. */
  static final int QUICK_RETRIES = 3;

  static final long QUICK_RETRY_NANOS = 1_000_000;

  /** Largest random pause before retrying a split vote during which a release was reported. */
  static final long WAKEUP_JITTER_NANOS = 2_000_000;

  /**
   * Waiting acquire calls of this Redlock by resource, one {@link WaitQueue} each while anybody
   * waits: one release wakes one waiter, and each notifying node is subscribed to once per
   * resource.
   */
  private final ConcurrentHashMap<String, WaitQueue> waitQueues = new ConcurrentHashMap<>();

  /** The local state of the {@code asLock} objects, by resource, while any thread uses one. */
  final ConcurrentHashMap<String, RedlockLock.Holder> lockHolders = new ConcurrentHashMap<>();

  /**
   * Queues a waiter of {@code resource} after its first attempt failed (as {@code tally} says). The
   * member that created the queue subscribes on every node that pushes release notifications; a
   * node that fails to register is only polled.
   */
  private WaitQueue.Waiter startWaiting(String resource, Tally tally) {
    WaitQueue.Waiter waiter = new WaitQueue.Waiter();
    waitQueues.compute(
        resource,
        (k, q) -> {
          WaitQueue out = q != null ? q : new WaitQueue(k, ticker);
          out.join(waiter, tally);
          return out;
        });
    return waiter;
  }

  /**
   * The member that created its queue subscribes on every node that pushes release notifications (a
   * node that fails to register is only polled). Called once the caller holds the waiter, so that
   * whatever happens here it leaves the queue again. Outside compute: onRelease may take a node's
   * locks. The queue cannot retire meanwhile: the member subscribing is in it.
   */
  private void subscribeIfFirst(WaitQueue.Waiter waiter) {
    WaitQueue queue = waiter.queue();
    if (queue.claimSubscribing()) {
      for (int i = 0; i < nodes.length; i++) {
        if (!notifies[i]) {
          continue;
        }
        try {
          queue.subscribed(nodes[i].onRelease(queue.resource, queue.listener(i)));
        } catch (RuntimeException e) {
          LOG.debug(
              "{}: onRelease for '{}' failed, polling: {}", names[i], queue.resource, e.toString());
        }
      }
    }
  }

  /**
   * Takes a waiter out of its queue (see {@link WaitQueue#leave}); the last one out retires the
   * queue and closes its subscriptions. A new waiter arriving meanwhile makes a new queue.
   */
  private void stopWaiting(WaitQueue.Waiter waiter, boolean acquired, long ttlNanos) {
    WaitQueue queue = waiter.queue();
    waitQueues.compute(
        queue.resource, (k, q) -> queue.leave(waiter, acquired, ttlNanos) && q == queue ? null : q);
    for (ReleaseSubscription subscription : queue.takeSubscriptions()) {
      try {
        subscription.close();
      } catch (RuntimeException e) {
        LOG.debug(
            "closing a release subscription on '{}' failed: {}", queue.resource, e.toString());
      }
    }
  }

  /** A lease of this Redlock on {@code resource} was just released: wakes its first waiter. */
  void releasedLocally(String resource) {
    WaitQueue queue = waitQueues.get(resource);
    if (queue != null) {
      queue.released(WaitQueue.LOCAL);
    }
  }

  /** Resources with waiting acquire calls now (for tests). */
  int waitingResources() {
    return waitQueues.size();
  }

  /** A pause uniform in [0, {@link #WAKEUP_JITTER_NANOS}]. */
  long pickJitterNanos() {
    return random.nextLong(WAKEUP_JITTER_NANOS + 1);
  }

  /** One attempt (see {@link Attempt}): the lease, or null after releasing on every node. */
  private QuorumLease attempt(
      String resource,
      Duration ttl,
      long ttlNanos,
      long driftNanos,
      long nodeTimeoutNanos,
      Tally tally) {
    tally.reset();
    tally.attempts++;
    QuorumLease lease = new QuorumLease(this, resource, newToken(), ttl, ticker.read());
    QuorumLease granted =
        new Attempt(quorum, safety, lease, ttl, nodeTimeoutNanos, tally)
            .run(ttlNanos, driftNanos, minValidityNanos, settings.strictNodes());
    if (granted == null) {
      if (LOG.isDebugEnabled()) {
        LOG.debug("attempt on '{}' failed and was released: {}", resource, describe(tally, ttl));
      }
      stopIfMisconfigured(resource, tally);
    }
    return granted;
  }

  /**
   * After a failed attempt: throws when nodes that fail non-transiently leave too few for a quorum,
   * or, with strict nodes, when any node does; retrying would not help.
   */
  private void stopIfMisconfigured(String resource, Tally tally) {
    if (tally.nonTransient == 0) {
      return;
    }
    int n = quorum.size();
    String why;
    if (tally.nonTransient > n - quorum.quorum) {
      why =
          tally.nonTransient
              + " of "
              + n
              + " nodes fail in a way no retry fixes, so a quorum of "
              + quorum.quorum
              + " is out of reach; fix them";
    } else if (settings.strictNodes()) {
      why =
          "strictNodes is on and "
              + (tally.nonTransient == 1 ? "a node fails" : tally.nonTransient + " nodes fail")
              + " in a way no retry fixes; fix "
              + (tally.nonTransient == 1 ? "it" : "them")
              + ", or build with strictNodes(false) to let the others outvote "
              + (tally.nonTransient == 1 ? "it" : "them");
    } else {
      return;
    }
    List<NodeFailure> failures =
        tally.nonTransientFailures().stream()
            .sorted(Comparator.comparingInt(f -> nameList.indexOf(f.node())))
            .toList();
    throw new NodesMisconfiguredException(resource, why, failures);
  }

  // ---------------------------------------------------------------------------------------------
  // Arguments, tokens, timing

  static long checkMaxWait(Duration maxWait) {
    if (maxWait == null) {
      throw new IllegalArgumentException(
          "maxWait must not be null; pass Duration.ZERO for a single attempt");
    }
    if (maxWait.isNegative()) {
      throw new IllegalArgumentException(
          "maxWait must not be negative, got "
              + maxWait
              + "; pass Duration.ZERO for a single attempt");
    }
    return saturatedNanos(maxWait);
  }

  private static void checkResource(String resource) {
    if (resource == null) {
      throw new IllegalArgumentException("resource must not be null; name the thing to lock");
    }
    if (resource.isBlank()) {
      throw new IllegalArgumentException(
          "resource must not be empty or blank, got \""
              + resource
              + "\"; name the thing to lock, e.g. \"invoice-42\"");
    }
  }

  /** Validates a TTL for acquire and extend; returns it in nanoseconds. */
  long checkTtl(Duration ttl) {
    if (ttl == null) {
      throw new IllegalArgumentException(
          "ttl must not be null; pass the lock's time to live, e.g. Duration.ofSeconds(10)");
    }
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException(
          "ttl must be positive, got " + ttl + "; pass e.g. Duration.ofSeconds(10)");
    }
    long ttlNanos;
    try {
      ttlNanos = ttl.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("ttl " + ttl + " is too long; use at most a few days", e);
    }
    if (ttl.compareTo(ttlPrecision) < 0) {
      throw new IllegalArgumentException(
          "ttl "
              + ttl
              + " is below the TTL precision of the nodes ("
              + ttlPrecision
              + "); use a TTL of at least "
              + ttlPrecision.toMillis()
              + " ms");
    }
    long driftNanos = driftNanos(ttl);
    if (ttlNanos - driftNanos < minValidityNanos) {
      double factor = settings.driftFactor();
      long needed =
          (long)
              Math.ceil(
                  (minValidityNanos + saturatedNanos(settings.driftBuffer()))
                      / (1 - factor)
                      / 1_000_000.0);
      throw new IllegalArgumentException(
          "ttl "
              + ttl
              + " leaves no validity: the drift allowance (ttl x driftFactor "
              + factor
              + " + driftBuffer "
              + settings.driftBuffer().toMillis()
              + " ms) and the minimum validity ("
              + settings.minValidity().toMillis()
              + " ms) take all of it; use a TTL well above "
              + needed
              + " ms");
    }
    if (safety != null) {
      safety.checkTtl(ttl);
    }
    return ttlNanos;
  }

  /**
   * The per-node wait for calls on a lock of this TTL, at most the TTL itself: an answer after it
   * is worthless (the key has expired), and the cap keeps deadline arithmetic from overflowing.
   */
  long nodeTimeoutNanos(Duration ttl) {
    return timing(ttl).nodeTimeoutNanos;
  }

  long driftNanos(Duration ttl) {
    return timing(ttl).driftNanos;
  }

  /**
   * The derived timings of the TTL used last. Nearly every caller uses one TTL for all its locks,
   * and deriving them costs more than a lock's whole CPU budget would like (Duration.dividedBy goes
   * through BigDecimal), so the last one is kept. Immutable, so a racy read is safe.
   */
  private static final class TtlTiming {
    final Duration ttl;
    final long nodeTimeoutNanos;
    final long driftNanos;

    TtlTiming(Duration ttl, RedlockSettings settings, long precisionNanos) {
      this.ttl = ttl;
      this.nodeTimeoutNanos =
          Math.min(saturatedNanos(settings.nodeTimeoutFor(ttl)), saturatedNanos(ttl));
      // A store may end a key up to one step of its TTL precision early (a coarse clock ticks
      // while the key is set): the validity discounts that step too.
      this.driftNanos = saturatedNanos(settings.driftFor(ttl)) + precisionNanos;
    }
  }

  private TtlTiming timing(Duration ttl) {
    TtlTiming t = lastTiming;
    if (t == null || !t.ttl.equals(ttl)) {
      t = new TtlTiming(ttl, settings, precisionNanos);
      lastTiming = t;
    }
    return t;
  }

  long minValidityNanos() {
    return minValidityNanos;
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("this Redlock is closed; build a new one to take locks");
    }
  }

  static String newToken() {
    TokenBytes random = TOKEN_BYTES_OF_THREAD.get();
    byte[] buffer = random.buffer;
    if (random.next == buffer.length) {
      TOKENS.nextBytes(buffer);
      random.next = 0;
    }
    int from = random.next;
    random.next = from + TOKEN_BYTES;
    byte[] bytes = Arrays.copyOfRange(buffer, from, from + TOKEN_BYTES);
    Arrays.fill(buffer, from, from + TOKEN_BYTES, (byte) 0); // used bytes are not kept
    return TOKEN_ENCODER.encodeToString(bytes);
  }

  /**
   * Random bytes for the next tokens of one thread, fetched {@value #TOKENS_PER_FETCH} tokens at a
   * time: one call to the shared SecureRandom (a lock and, with the default NativePRNG, a read of
   * /dev/urandom) per batch instead of per token was a visible share of a lock cycle's CPU, and
   * threads no longer queue on its lock.
   */
  private static final class TokenBytes {
    final byte[] buffer = new byte[TOKEN_BYTES * TOKENS_PER_FETCH];
    int next = buffer.length;
  }

  /** A pause uniform in [retryDelayMin, retryDelayMax]. */
  long pickPauseNanos() {
    long min = saturatedNanos(settings.retryDelayMin());
    long max = saturatedNanos(settings.retryDelayMax());
    long span = max - min;
    if (span <= 0) {
      return min;
    }
    return min + random.nextLong(span == Long.MAX_VALUE ? span : span + 1);
  }

  static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return d.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
  }

  LockTimeoutException timeout(
      String resource, Duration ttl, long waitedNanos, int attempts, Tally tally) {
    String detail =
        describe(tally, ttl) + " (" + attempts + (attempts == 1 ? " attempt)" : " attempts)");
    return new LockTimeoutException(
        resource,
        Duration.ofNanos(waitedNanos),
        reason(tally),
        detail,
        quorum.inNodeOrder(tally.failed),
        tally.firstFailure);
  }

  /** Why the last attempt failed; the same cases as {@link #describe}, in the same order. */
  private LockTimeoutException.Reason reason(Tally tally) {
    if (tally.reason != null) {
      return tally.reason;
    }
    if (tally.yes >= quorum.quorum) {
      return LockTimeoutException.Reason.TOO_SLOW;
    }
    if (tally.yes + tally.no < quorum.quorum && tally.failedCount() > 0) {
      return LockTimeoutException.Reason.UNREACHABLE;
    }
    return LockTimeoutException.Reason.HELD;
  }

  /** Why the last attempt failed, in words. */
  String describe(Tally tally, Duration ttl) {
    int n = nodes.length;
    int answered = tally.yes + tally.no;
    StringBuilder sb = new StringBuilder(128);
    if (Thread.currentThread().isInterrupted()) {
      sb.append("interrupted; ");
    }
    if (tally.detail != null) {
      sb.append(tally.detail); // fencing or quarantine said why
      if (tally.failedCount() > 0) {
        sb.append("; unreachable: ").append(String.join(", ", quorum.inNodeOrder(tally.failed)));
      }
    } else if (tally.yes >= quorum.quorum) {
      sb.append("acquired on ")
          .append(tally.yes)
          .append(" of ")
          .append(n)
          .append(" nodes, but the acquisition took ")
          .append(tally.elapsedNanos / 1_000_000)
          .append(" ms of the ")
          .append(ttl.toMillis())
          .append(" ms TTL, leaving ")
          .append(tally.validityNanos / 1_000_000)
          .append(" ms of validity after the drift allowance (minimum ")
          .append(settings.minValidity().toMillis())
          .append(" ms); use a longer TTL or find out why the nodes are slow");
    } else if (answered < quorum.quorum && tally.failedCount() > 0) {
      sb.append("too few nodes reachable: ")
          .append(answered)
          .append(" of ")
          .append(n)
          .append(" answered, a quorum needs ")
          .append(quorum.quorum)
          .append("; unreachable: ")
          .append(String.join(", ", quorum.inNodeOrder(tally.failed)));
      if (tally.no > 0) {
        sb.append("; held elsewhere on ").append(tally.no).append(" of the nodes that answered");
      }
    } else {
      sb.append("held by another client: ")
          .append(tally.no)
          .append(" of ")
          .append(n)
          .append(" nodes said the resource is held, ")
          .append(tally.yes)
          .append(" accepted, a quorum needs ")
          .append(quorum.quorum);
      if (tally.failedCount() > 0) {
        sb.append("; unreachable: ").append(String.join(", ", quorum.inNodeOrder(tally.failed)));
      }
    }
    return sb.toString();
  }

  // ---------------------------------------------------------------------------------------------

  // ---------------------------------------------------------------------------------------------
  // Async, several resources, resume, Lock

  /** One attempt with this TTL's timings, for {@link AsyncAcquisition}; null if it failed. */
  QuorumLease attemptOnce(String resource, Duration ttl, long ttlNanos, Tally tally) {
    checkOpen();
    return attempt(resource, ttl, ttlNanos, driftNanos(ttl), nodeTimeoutNanos(ttl), tally);
  }

  @Override
  public CompletableFuture<Optional<Lease>> tryAcquireAsync(String resource, Duration ttl) {
    checkResource(resource);
    checkOpen();
    return new AsyncAcquisition(this, resource, ttl, settings.retryAttempts(), -1)
        .start()
        .handle(
            (lease, failure) -> {
              if (failure == null) {
                return Optional.of(lease);
              }
              Throwable cause =
                  failure instanceof java.util.concurrent.CompletionException c
                          && c.getCause() != null
                      ? c.getCause()
                      : failure;
              if (cause instanceof LockTimeoutException) {
                return Optional.empty(); // as tryAcquire: held, or too few nodes answered
              }
              throw failure instanceof java.util.concurrent.CompletionException c
                  ? c
                  : new java.util.concurrent.CompletionException(cause);
            });
  }

  @Override
  public CompletableFuture<Lease> acquireAsync(String resource, Duration ttl, Duration maxWait) {
    checkResource(resource);
    long maxWaitNanos = checkMaxWait(maxWait);
    checkOpen();
    return new AsyncAcquisition(this, resource, ttl, 0, maxWaitNanos).start();
  }

  @Override
  public Lease acquireAll(Collection<String> resources, Duration ttl, Duration maxWait)
      throws InterruptedException {
    Objects.requireNonNull(resources, "resources must not be null");
    if (resources.isEmpty()) {
      throw new IllegalArgumentException("resources must name at least one resource to lock");
    }
    resources.forEach(QuorumRedlock::checkResource);
    long maxWaitNanos = checkMaxWait(maxWait);
    checkTtl(ttl);
    long start = ticker.read();
    List<Lease> parts = new ArrayList<>();
    boolean done = false;
    try {
      // One order for every caller: two callers of overlapping sets never wait for each other
      // in a circle.
      for (String resource : new java.util.TreeSet<>(resources)) {
        long left = Math.max(0, maxWaitNanos - (ticker.read() - start));
        parts.add(acquire(resource, ttl, Duration.ofNanos(left)));
      }
      // The first parts ran down while the later ones were awaited: renew them if they did much.
      long half = saturatedNanos(ttl) / 2;
      for (Lease part : parts) {
        if (part.remainingValidity().toNanos() < half && !part.extend(ttl)) {
          throw timeout(
              part.resource(),
              ttl,
              ticker.read() - start,
              parts.size(),
              failedTally(
                  "could not extend '"
                      + part.resource()
                      + "' while the others were"
                      + " acquired; its validity would have run out first"));
        }
      }
      done = true;
      return parts.size() == 1 ? parts.get(0) : new MultiLease(parts, scheduler);
    } finally {
      if (!done) {
        parts.forEach(Lease::release);
      }
    }
  }

  private static Tally failedTally(String detail) {
    Tally tally = new Tally();
    tally.detail = detail;
    tally.reason = LockTimeoutException.Reason.TOO_SLOW;
    return tally;
  }

  @Override
  public Lease resume(String resource, String token, Duration ttl) {
    checkResource(resource);
    if (token == null || token.isBlank()) {
      throw new IllegalArgumentException("token must be the token of the lease to resume");
    }
    long ttlNanos = checkTtl(ttl);
    checkOpen();
    long start = ticker.read();
    QuorumLease lease = new QuorumLease(this, resource, token, ttl, start);
    lease.activate(start + ttlNanos); // provisional: the extension below sets the real validity
    if (lease.extend(ttl)) {
      return lease;
    }
    lease.markDone();
    throw new io.redlock.LeaseLostException(
        new io.redlock.LeaseLost(
            resource,
            io.redlock.LeaseLost.Reason.TOKEN_GONE,
            "too few nodes still hold this token (released, expired, or never held); nothing was"
                + " resumed"));
  }

  @Override
  public java.util.concurrent.locks.Lock asLock(String resource, Duration ttl) {
    checkResource(resource);
    return new RedlockLock(this, resource, ttl);
  }

  /** Why an extension failed, in words, for loss messages. */
  String describeExtension(Tally tally) {
    return tally.yes
        + " of "
        + quorum.size()
        + " nodes agreed, a quorum needs "
        + quorum.quorum
        + (tally.failedCount() > 0
            ? "; unreachable: " + String.join(", ", quorum.inNodeOrder(tally.failed))
            : "");
  }

  @Override
  public List<String> nodes() {
    return nameList;
  }

  @Override
  public int quorum() {
    return quorum.quorum;
  }

  @Override
  public List<NodeHealth> health() {
    return quorum.states.snapshot();
  }

  @Override
  public List<io.redlock.NodeReport> probe(int rounds, Duration timeout) {
    checkOpen();
    return Probe.run(quorum, settings, rounds, timeout);
  }

  @Override
  public RedlockSettings settings() {
    return settings;
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      scheduler.close(); // no renewal is sent after this, and watched leases hear of it
      quorum.background.close();
      closeAll(nodes);
      LOG.debug("Redlock over {} closed", nameList);
    }
  }

  private static void closeAll(LockNode[] nodes) {
    for (LockNode node : nodes) {
      try {
        node.close();
      } catch (RuntimeException e) {
        // One node failing to close must not keep the others open.
        LOG.warn("{}: close failed: {}", NodeUri.redact(String.valueOf(node.name())), e.toString());
      }
    }
  }

  @Override
  public String toString() {
    return "Redlock" + nameList + " quorum " + quorum.quorum;
  }
}
