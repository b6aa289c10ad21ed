package io.redlock.engine.internal;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLock;
import io.redlock.LockTimeoutException;
import io.redlock.NodeHealth;
import io.redlock.NodesMisconfiguredException;
import io.redlock.Redlock;
import io.redlock.RedlockListener;
import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeUri;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
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

  private static final SecureRandom TOKENS = new SecureRandom();

  private static final Base64.Encoder TOKEN_ENCODER = Base64.getUrlEncoder().withoutPadding();

  private static final int TOKENS_PER_FETCH = 32;

  private static final ThreadLocal<TokenBytes> TOKEN_BYTES_OF_THREAD =
      ThreadLocal.withInitial(TokenBytes::new);

  /** Thread-safe without sharing state between threads, unlike a shared java.util.Random. */
  private static final RandomGenerator THREAD_LOCAL_RANDOM =
      () -> ThreadLocalRandom.current().nextLong();

  final Quorum quorum;
  final Listening listening;

  private final LockNode[] nodes;
  private final List<String> nameList;
  final RedlockSettings settings;
  final Ticker ticker;
  private final Sleeper sleeper;

  final Timing timing;
  private final Waiting waiting;

  private final AtomicBoolean closed = new AtomicBoolean();

  /** Fencing and restart quarantine, or null when neither is on (the one-round plain path). */
  final Safety safety;

  final Scheduler scheduler =
      new Scheduler(Math.max(2, Runtime.getRuntime().availableProcessors()));
  final Leasing leasing;

  QuorumRedlock(List<LockNode> nodes, RedlockSettings settings, Ticker ticker) {
    this(nodes, settings, ticker, RedlockListener.NONE);
  }

  QuorumRedlock(
      List<LockNode> nodes, RedlockSettings settings, Ticker ticker, RedlockListener listener) {
    this(nodes, settings, ticker, Sleeper.SYSTEM, THREAD_LOCAL_RANDOM, true, listener);
  }

  /**
   * Tests pass a fake ticker, a sleeper that moves it, a seeded random source, and whether to run
   * the {@link BuildChecks} (their status calls would move a fake ticker behind the test's back).
   */
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
    LockNode[] nodeArray = nodes.toArray(new LockNode[0]);
    this.nodes = nodeArray;
    if (nodeArray.length == 0) {
      throw new IllegalArgumentException("a Redlock needs at least one node");
    }
    String[] names = new String[nodeArray.length];
    Duration precision = Duration.ofNanos(1);
    Set<LockNode> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    Set<String> seenNames = new HashSet<>();
    for (int i = 0; i < nodeArray.length; i++) {
      LockNode node = Objects.requireNonNull(nodeArray[i], "node must not be null");
      String name = NodeUri.redact(String.valueOf(node.name()));
      // The same store counted twice would let one store's vote count as two: a broken quorum.
      if (!seen.add(node) || !seenNames.add(name)) {
        throw new IllegalArgumentException(
            "node '"
                + name
                + "' is listed twice; every node of a Redlock must be a separate, independent store");
      }
      names[i] = name;
      Duration p = node.capabilities().ttlPrecision();
      if (p.compareTo(precision) > 0) {
        precision = p;
      }
    }
    this.listening = new Listening(Objects.requireNonNull(listener, "listener"));
    this.quorum = new Quorum(nodeArray, names, ticker, listening, scheduler);
    this.nameList = quorum.nameList;
    this.safety = Safety.create(quorum, settings);
    this.timing = new Timing(settings, precision, Objects.requireNonNull(random, "random"), safety);
    this.waiting = new Waiting(nodeArray, names, quorum.quorum, ticker, sleeper, timing);
    this.leasing = new Leasing(quorum, timing, safety, scheduler, waiting::releasedLocally);
    if (checkNodes) {
      try {
        BuildChecks.run(quorum, settings);
      } catch (RuntimeException | Error e) {
        scheduler.close(); // the nodes stay open: they are the caller's to close
        throw e;
      }
    }
    if (LOG.isDebugEnabled()) {
      LOG.debug("Redlock over {} nodes (quorum {}): {}", nodeArray.length, quorum.quorum, nameList);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Acquisition

  @Override
  public Optional<Lease> tryAcquire(String resource, Duration ttl) {
    Timing.checkResource(resource);
    long ttlNanos = timing.checkTtl(ttl);
    checkOpen();
    Tally tally = new Tally();
    long began = listening.on ? ticker.read() : 0;
    Optional<Lease> lease = Optional.empty();
    try {
      return lease = tryAcquire(resource, ttl, ttlNanos, tally);
    } finally {
      listened(resource, lease.isPresent(), tally, began);
    }
  }

  private void listened(String resource, boolean acquired, Tally tally, long began) {
    if (listening.on) {
      listening.acquisition(resource, acquired, tally.attempts, ticker.read() - began);
    }
  }

  private Optional<Lease> tryAcquire(String resource, Duration ttl, long ttlNanos, Tally tally) {
    long driftNanos = timing.driftNanos(ttl);
    long nodeTimeoutNanos = timing.nodeTimeoutNanos(ttl);
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
              "could not lock '{}' in {} attempts: {}",
              resource,
              attempts,
              tally.describe(quorum, ttl, settings.minValidity()));
        }
        return Optional.empty();
      }
      try {
        sleeper.sleep(timing.pickPauseNanos());
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
    Timing.checkResource(resource);
    long ttlNanos = timing.checkTtl(ttl);
    long maxWaitNanos = Timing.checkMaxWait(maxWait);
    checkOpen();
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted before trying to lock '" + resource + "'");
    }
    Tally tally = new Tally();
    long began = listening.on ? ticker.read() : 0;
    Lease lease = null;
    try {
      return lease = acquire(resource, ttl, ttlNanos, maxWaitNanos, tally);
    } finally {
      listened(resource, lease != null, tally, began);
    }
  }

  private Lease acquire(
      String resource, Duration ttl, long ttlNanos, long maxWaitNanos, Tally tally)
      throws InterruptedException {
    long driftNanos = timing.driftNanos(ttl);
    long nodeTimeoutNanos = timing.nodeTimeoutNanos(ttl);
    long start = ticker.read();
    Waiting.Retries retries = waiting.retries(resource);
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

  /** A lease of this Redlock on {@code resource} was just released: wakes its first waiter. */
  void releasedLocally(String resource) {
    waiting.releasedLocally(resource);
  }

  /** Resources with waiting acquire calls now (for tests). */
  int waitingResources() {
    return waiting.waitingResources();
  }

  /** The local state of the {@code asLock} objects, by resource, while any thread uses one. */
  final ConcurrentHashMap<String, RedlockLock.Holder> lockHolders = new ConcurrentHashMap<>();

  /** One {@link Attempt}: the lease, or null after releasing on every node. */
  private QuorumLease attempt(
      String resource,
      Duration ttl,
      long ttlNanos,
      long driftNanos,
      long nodeTimeoutNanos,
      Tally tally) {
    tally.reset();
    tally.attempts++;
    QuorumLease lease = new QuorumLease(leasing, resource, newToken(), ttl, ticker.read());
    QuorumLease granted =
        new Attempt(quorum, safety, lease, ttl, nodeTimeoutNanos, tally)
            .run(ttlNanos, driftNanos, timing.minValidityNanos, settings.strictNodes());
    if (granted == null) {
      if (LOG.isDebugEnabled()) {
        LOG.debug(
            "attempt on '{}' failed and was released: {}",
            resource,
            tally.describe(quorum, ttl, settings.minValidity()));
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
    throw new NodesMisconfiguredException(
        resource, why, quorum.sortedFailures(tally.nonTransientFailures()));
  }

  LockTimeoutException timeout(
      String resource, Duration ttl, long waitedNanos, int attempts, Tally tally) {
    return tally.timeout(quorum, resource, ttl, settings.minValidity(), waitedNanos, attempts);
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("this Redlock is closed; build a new one to take locks");
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Tokens

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

  // ---------------------------------------------------------------------------------------------
  // Async, several resources, resume, Lock

  /** One attempt with this TTL's timings, for {@link AsyncAcquisition}; null if it failed. */
  QuorumLease attemptOnce(String resource, Duration ttl, long ttlNanos, Tally tally) {
    checkOpen();
    return attempt(
        resource, ttl, ttlNanos, timing.driftNanos(ttl), timing.nodeTimeoutNanos(ttl), tally);
  }

  @Override
  public CompletableFuture<Optional<Lease>> tryAcquireAsync(String resource, Duration ttl) {
    Timing.checkResource(resource);
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
    Timing.checkResource(resource);
    long maxWaitNanos = Timing.checkMaxWait(maxWait);
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
    resources.forEach(Timing::checkResource);
    long maxWaitNanos = Timing.checkMaxWait(maxWait);
    timing.checkTtl(ttl);
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
      long half = Timing.saturatedNanos(ttl) / 2;
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
    Timing.checkResource(resource);
    if (token == null || token.isBlank()) {
      throw new IllegalArgumentException("token must be the token of the lease to resume");
    }
    long ttlNanos = timing.checkTtl(ttl);
    checkOpen();
    long start = ticker.read();
    QuorumLease lease = new QuorumLease(leasing, resource, token, ttl, start);
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
  public LeaseLock asLock(String resource, Duration ttl, KeepAlive keepAlive) {
    Timing.checkResource(resource);
    return new RedlockLock(this, resource, ttl, keepAlive);
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
