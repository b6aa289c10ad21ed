package io.redlock.engine.internal;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Test-only decorator of an {@link InMemoryLockNode} that injects faults: a node that is down, one
 * that throws when a call starts, one whose answer misses the deadline (delivered later through
 * {@link Reply#abandon}), latency that moves the fake ticker, and counters per operation. It also
 * checks the engine's side of the {@link Reply} contract: every reply awaited or abandoned.
 */
final class FaultyNode implements LockNode {

  enum Mode {
    /** Answers at once. */
    UP,
    /** Every call gives a failed reply (connection refused). */
    DOWN,
    /** Every call throws {@link #throwing} when it starts. */
    THROWS,
    /** The request reaches the store only after the deadline: lands at {@link #deliverLate()}. */
    SLOW,
    /** The request lands at once, but the answer misses the deadline. */
    SLOW_ANSWER,
    /** The request lands at once; waiting for it is interrupted (as Reply.await reports it). */
    INTERRUPTS
  }

  /** The store behind the faults, for inspecting keys directly. */
  final InMemoryLockNode store;

  private final String name;
  private final FakeTicker ticker;
  private final List<String> events;
  private volatile Mode mode = Mode.UP;
  private volatile RuntimeException throwing;
  private volatile io.redlock.RedlockException downFailure;
  private volatile Duration latency = Duration.ZERO;
  private volatile Duration acquireLatency = Duration.ZERO;
  private volatile RuntimeException closeFailure;

  final AtomicInteger acquireCalls = new AtomicInteger();
  final AtomicInteger releaseCalls = new AtomicInteger();
  final AtomicInteger extendCalls = new AtomicInteger();
  final AtomicInteger closeCalls = new AtomicInteger();
  final AtomicInteger fencedCalls = new AtomicInteger();
  final AtomicInteger raiseCalls = new AtomicInteger();
  final AtomicInteger statusCalls = new AtomicInteger();

  /** Faults of raiseFence and status alone (the other calls follow {@link #mode}). */
  private volatile Mode raiseMode = Mode.UP;

  private volatile Mode statusMode = Mode.UP;
  private volatile Duration raiseLatency = Duration.ZERO;

  /** What status() answers instead of the store's status, if set. */
  private volatile NodeStatus statusOverride;

  private volatile boolean declaresFencing = true;
  private volatile boolean declaresStatus = true;
  private volatile boolean declaresReleaseNotifications = false;
  final List<String> acquireTokens = Collections.synchronizedList(new ArrayList<>());
  final Set<Thread> callerThreads = ConcurrentHashMap.newKeySet();
  private final List<Tracked<?>> replies = Collections.synchronizedList(new ArrayList<>());
  private final List<Late<?>> late = Collections.synchronizedList(new ArrayList<>());
  final List<String> violations = Collections.synchronizedList(new ArrayList<>());

  FaultyNode(String name, FakeTicker ticker, List<String> events) {
    this(name, ticker, events, false);
  }

  /** A node whose store keeps its keys and counters across a restart if {@code durable}. */
  FaultyNode(String name, FakeTicker ticker, List<String> events, boolean durable) {
    this.name = name;
    this.ticker = ticker;
    this.events = events;
    this.store = new InMemoryLockNode(name, ticker, durable);
  }

  FaultyNode up() {
    mode = Mode.UP;
    return this;
  }

  FaultyNode down() {
    downFailure = null;
    mode = Mode.DOWN;
    return this;
  }

  /** Every call fails with a non-transient failure (a wrong password, a missing table). */
  FaultyNode misconfigured(String why) {
    downFailure = new io.redlock.RedlockNonTransientException(name, why, null);
    mode = Mode.DOWN;
    return this;
  }

  FaultyNode slow() {
    mode = Mode.SLOW;
    return this;
  }

  FaultyNode slowAnswer() {
    mode = Mode.SLOW_ANSWER;
    return this;
  }

  FaultyNode interrupting() {
    mode = Mode.INTERRUPTS;
    return this;
  }

  FaultyNode throwing(RuntimeException e) {
    throwing = e;
    mode = Mode.THROWS;
    return this;
  }

  FaultyNode latency(Duration perCall) {
    latency = perCall;
    return this;
  }

  /** Latency of tryAcquire calls only (on top of {@link #latency}). */
  FaultyNode acquireLatency(Duration perCall) {
    acquireLatency = perCall;
    return this;
  }

  FaultyNode failOnClose(RuntimeException e) {
    closeFailure = e;
    return this;
  }

  /** raiseFence calls behave as {@code m}; the other calls are unaffected. */
  FaultyNode raiseMode(Mode m) {
    raiseMode = m;
    return this;
  }

  /** Latency of raiseFence calls (moves the fake ticker when the call starts). */
  FaultyNode raiseLatency(Duration perCall) {
    raiseLatency = perCall;
    return this;
  }

  /** status calls behave as {@code m}; the other calls are unaffected. */
  FaultyNode statusMode(Mode m) {
    statusMode = m;
    return this;
  }

  /** status() answers this instead of the store's status ({@code null}: the store's again). */
  FaultyNode reportStatus(NodeStatus status) {
    statusOverride = status;
    return this;
  }

  /** The node declares no fencing counters. */
  FaultyNode withoutFencing() {
    declaresFencing = false;
    return this;
  }

  /** The node declares no status report. */
  FaultyNode withoutStatus() {
    declaresStatus = false;
    return this;
  }

  /** The node recovers: answers that missed their deadline arrive now, in call order. */
  void deliverLate() {
    mode = Mode.UP;
    List<Late<?>> pending;
    synchronized (late) {
      pending = new ArrayList<>(late);
      late.clear();
    }
    for (Late<?> reply : pending) {
      reply.deliver();
    }
  }

  /**
   * Ends the calls that missed their deadline without an answer (the backend dropped them, or gave
   * up waiting): their abandon handlers get null, and the node answers again.
   */
  void dropLate() {
    mode = Mode.UP;
    List<Late<?>> pending;
    synchronized (late) {
      pending = new ArrayList<>(late);
      late.clear();
    }
    for (Late<?> reply : pending) {
      reply.drop();
    }
  }

  /** Replies handed out that were neither awaited nor abandoned. */
  long unsettledReplies() {
    synchronized (replies) {
      return replies.stream().filter(r -> !r.settled()).count();
    }
  }

  @Override
  public String name() {
    return name;
  }

  /** Declares release notifications, passed on from the store (off by default). */
  FaultyNode notifyingReleases() {
    declaresReleaseNotifications = true;
    return this;
  }

  /** Registrations made through {@link #onRelease} and not closed yet. */
  final AtomicInteger openSubscriptions = new AtomicInteger();

  final AtomicInteger subscribeCalls = new AtomicInteger();

  @Override
  public ReleaseSubscription onRelease(String key, Runnable listener) {
    if (!declaresReleaseNotifications) {
      violations.add("onRelease called on a node that does not declare release notifications");
    }
    ReleaseSubscription inner = store.onRelease(key, listener);
    subscribeCalls.incrementAndGet();
    openSubscriptions.incrementAndGet();
    Runnable mine = listener::run; // a fresh identity: the same listener may register twice
    releaseListeners.add(mine);
    java.util.concurrent.atomic.AtomicBoolean closed =
        new java.util.concurrent.atomic.AtomicBoolean();
    return () -> {
      if (closed.compareAndSet(false, true)) {
        openSubscriptions.decrementAndGet();
        releaseListeners.remove(mine);
        inner.close();
      }
    };
  }

  /** The listeners registered through {@link #onRelease} and not closed yet. */
  private final Set<Runnable> releaseListeners = ConcurrentHashMap.newKeySet();

  /**
   * Calls every open release listener, on the calling thread, without releasing anything: a late or
   * repeated notification, as a node may send after it reconnects.
   */
  void notifyListeners() {
    releaseListeners.forEach(Runnable::run);
  }

  /** Runs on the calling thread at the start of every tryAcquire (for per-thread counts). */
  volatile Runnable beforeAcquire = () -> {};

  @Override
  public NodeCapabilities capabilities() {
    NodeCapabilities plain = new NodeCapabilities(store.capabilities().ttlPrecision());
    if (declaresFencing) {
      plain = plain.withFencing();
    }
    if (declaresReleaseNotifications) {
      plain = plain.withReleaseNotifications();
    }
    return declaresStatus ? plain.withStatus() : plain;
  }

  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    if (!declaresFencing) {
      violations.add("tryAcquireFenced called on a node that declares no fencing");
    }
    acquireCalls.incrementAndGet();
    fencedCalls.incrementAndGet();
    acquireTokens.add(token);
    ticker.advance(acquireLatency);
    return call("tryAcquireFenced", mode, () -> store.tryAcquireFenced(key, token, ttl));
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    if (!declaresFencing) {
      violations.add("raiseFence called on a node that declares no fencing");
    }
    raiseCalls.incrementAndGet();
    ticker.advance(raiseLatency);
    Mode m = mode == Mode.UP ? raiseMode : mode;
    return call("raiseFence", m, () -> store.raiseFence(key, token, atLeast));
  }

  @Override
  public Reply<NodeStatus> status() {
    if (!declaresStatus) {
      violations.add("status called on a node that declares no status");
    }
    statusCalls.incrementAndGet();
    Mode m = mode == Mode.UP ? statusMode : mode;
    NodeStatus override = statusOverride;
    return call("status", m, () -> override != null ? Reply.of(override) : store.status());
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    acquireCalls.incrementAndGet();
    acquireTokens.add(token);
    beforeAcquire.run();
    ticker.advance(acquireLatency);
    return call("tryAcquire", () -> store.tryAcquire(key, token, ttl));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    releaseCalls.incrementAndGet();
    return call("release", () -> store.release(key, token));
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    extendCalls.incrementAndGet();
    return call("extend", () -> store.extend(key, token, ttl));
  }

  private <T> Reply<T> call(String op, Supplier<Reply<T>> operation) {
    return call(op, mode, operation);
  }

  private <T> Reply<T> call(String op, Mode mode, Supplier<Reply<T>> operation) {
    events.add("start " + op + " " + name);
    callerThreads.add(Thread.currentThread());
    ticker.advance(latency);
    Reply<T> reply =
        switch (mode) {
          case UP -> operation.get();
          case DOWN ->
              Reply.failed(
                  downFailure != null
                      ? downFailure
                      : new RedlockTransientException(name, "connection refused (injected)", null));
          case THROWS -> throw throwing;
          case SLOW -> new Late<>(operation, false, false);
          case SLOW_ANSWER -> new Late<>(operation, true, false);
          case INTERRUPTS -> new Late<>(operation, true, true);
        };
    Tracked<T> tracked = new Tracked<>(op, reply);
    replies.add(tracked);
    return tracked;
  }

  @Override
  public void close() {
    closeCalls.incrementAndGet();
    store.close();
    RuntimeException e = closeFailure;
    if (e != null) {
      throw e;
    }
  }

  @Override
  public String toString() {
    return name;
  }

  /** Records how the engine settles each reply. */
  private final class Tracked<T> implements Reply<T> {
    private final String op;
    private final Reply<T> delegate;
    private final AtomicInteger awaits = new AtomicInteger();
    private final AtomicInteger abandons = new AtomicInteger();
    private volatile boolean timedOut;

    Tracked(String op, Reply<T> delegate) {
      this.op = op;
      this.delegate = delegate;
    }

    boolean settled() {
      return (awaits.get() > 0 && !timedOut) || abandons.get() > 0;
    }

    @Override
    public T await(Duration timeout) {
      events.add("await " + op + " " + name);
      if (timeout.isNegative()) {
        violations.add(op + ": await with a negative timeout " + timeout);
      }
      if (awaits.incrementAndGet() > 1) {
        violations.add(op + ": awaited twice");
      }
      try {
        return delegate.await(timeout);
      } catch (NodeTimeoutException e) {
        timedOut = true;
        throw e;
      } catch (RedlockTransientException e) {
        if (Thread.currentThread().isInterrupted()) {
          timedOut = true; // the answer may still come: it must be abandoned
        }
        throw e;
      }
    }

    @Override
    public void abandon(Consumer<? super T> lateAnswer) {
      if (abandons.incrementAndGet() > 1) {
        violations.add(op + ": abandoned twice");
      }
      delegate.abandon(lateAnswer);
    }
  }

  /** A reply that misses any deadline; its answer is handed to the abandon handler later. */
  private final class Late<T> implements Reply<T> {
    private final Supplier<Reply<T>> operation;
    private final Reply<T> landed;
    private final boolean interrupts;
    private volatile Consumer<? super T> lateAnswer;

    Late(Supplier<Reply<T>> operation, boolean landsNow, boolean interrupts) {
      this.operation = operation;
      this.landed = landsNow ? operation.get() : null;
      this.interrupts = interrupts;
      late.add(this);
    }

    @Override
    public T await(Duration timeout) {
      if (interrupts) {
        Thread.currentThread().interrupt();
        throw new RedlockTransientException(name, "interrupted while waiting for the node", null);
      }
      ticker.advance(timeout); // waiting out the whole timeout
      throw new NodeTimeoutException(name, timeout);
    }

    @Override
    public void abandon(Consumer<? super T> lateAnswer) {
      this.lateAnswer = lateAnswer;
    }

    void drop() {
      Consumer<? super T> handler = lateAnswer;
      if (handler != null) {
        handler.accept(null);
      }
    }

    void deliver() {
      T answer = (landed != null ? landed : operation.get()).await(Duration.ZERO);
      Consumer<? super T> handler = lateAnswer;
      if (handler != null) {
        handler.accept(answer);
      }
    }
  }
}
