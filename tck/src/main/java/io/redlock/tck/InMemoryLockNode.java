package io.redlock.tck;

import io.redlock.Ticker;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.spi.support.ReleaseListeners;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;

/**
 * A lock node held in this JVM's memory: the reference implementation of the {@link LockNode}
 * contract, optional parts included (fencing counters, status, release notifications and reads of
 * its clock), and a node for unit tests. Expiry and uptime follow the given {@link Ticker}, so a
 * test can move time forward by hand. Not a distributed lock: it excludes threads of one JVM only.
 *
 * <p>{@link #restart()} simulates a crash and restart of the store: a new incarnation whose uptime
 * starts at zero. A node created {@linkplain #InMemoryLockNode(String, Ticker, boolean) durable}
 * keeps its keys and counters across it (like Redis with {@code appendfsync always}); otherwise
 * they are lost, and counters start again from a floor that cannot be below a value handed out
 * before: the wall clock in microseconds (the approach the Redis backend takes; it assumes the wall
 * clock did not go back across the restart and that no counter was raised past it).
 */
public final class InMemoryLockNode implements LockNode {
  private record Entry(String token, long expiresAtNanos) {}

  private final String name;
  private final Ticker ticker;
  private final boolean durable;

  /** The store's wall clock, for {@link #serverTime()} only: expiry follows the ticker. */
  private final Clock clock;

  private final ConcurrentMap<String, Entry> keys = new ConcurrentHashMap<>();

  /**
   * Fencing counters, surviving release and expiry. Written only inside {@code keys.compute*} for
   * the same key, so a counter changes atomically with its key.
   */
  private final ConcurrentMap<String, Long> fences = new ConcurrentHashMap<>();

  private final AtomicBoolean closed = new AtomicBoolean();

  /** Release listeners by key ({@link #onRelease}), called on the releasing thread. */
  private final ReleaseListeners<String> listeners;

  private volatile String incarnation = UUID.randomUUID().toString();
  private volatile long startedAtNanos;

  /** After a non-durable restart, where lost counters start again; 0 before any restart. */
  private volatile long fenceFloor;

  /** A node named {@code name} whose expiry follows {@code ticker}; not durable. */
  public InMemoryLockNode(String name, Ticker ticker) {
    this(name, ticker, false);
  }

  /**
   * A node named {@code name} whose expiry and uptime follow {@code ticker}.
   *
   * @param durable true if keys and counters survive {@link #restart()}
   */
  public InMemoryLockNode(String name, Ticker ticker, boolean durable) {
    this(name, ticker, durable, Clock.systemUTC());
  }

  /**
   * A node named {@code name} whose expiry and uptime follow {@code ticker} and whose {@link
   * #serverTime()} reads {@code clock}: e.g. {@code Clock.offset(Clock.systemUTC(),
   * Duration.ofSeconds(30))} for a store whose clock is 30 s ahead of this machine's.
   *
   * @param durable true if keys and counters survive {@link #restart()}
   */
  public InMemoryLockNode(String name, Ticker ticker, boolean durable, Clock clock) {
    this.name = Objects.requireNonNull(name, "name");
    this.listeners = new ReleaseListeners<>(name);
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.durable = durable;
    this.clock = Objects.requireNonNull(clock, "clock");
    this.startedAtNanos = ticker.read();
  }

  /** A node on the system's monotonic clock; not durable. */
  public InMemoryLockNode(String name) {
    this(name, Ticker.system());
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public NodeCapabilities capabilities() {
    return NodeCapabilities.millisecondPrecision()
        .withFencing()
        .withStatus()
        .withReleaseNotifications()
        .withClock()
        .withInspection();
  }

  @Override
  public Reply<Optional<KeyHolder>> inspect(String key) {
    checkOpen();
    LockNodeArguments.requireKey(key);
    return Reply.of(holder(key));
  }

  /**
   * The store's clock: this JVM's wall clock ({@link Clock#systemUTC()}), or the clock given to the
   * constructor, read afresh on every call.
   */
  @Override
  public Reply<Instant> serverTime() {
    checkOpen();
    return Reply.of(clock.instant());
  }

  /**
   * Calls {@code listener} on the releasing thread whenever {@code key} is deleted by {@link
   * #release}, and for every key at a {@link #restart()} that loses the keys.
   */
  @Override
  public ReleaseSubscription onRelease(String key, Runnable listener) {
    checkOpen();
    LockNodeArguments.requireKey(key);
    return listeners.register(key, listener);
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    return Reply.of(insert(key, token, ttl, false));
  }

  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    return Reply.of(insert(key, token, ttl, true));
  }

  /** Sets an absent or expired key, and moves its counter with it if {@code fenced}. */
  private AcquireResult insert(String key, String token, Duration ttl, boolean fenced) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    long now = ticker.read();
    Entry mine = new Entry(token, now + ttl.toNanos());
    long[] fence = {0};
    Entry after =
        keys.compute(
            key,
            (k, e) -> {
              if (e != null && !expired(e, now)) {
                return e;
              }
              if (fenced) { // under the key's lock: the counter moves together with the insert
                fence[0] = Math.max(fences.getOrDefault(k, 0L), fenceFloor) + 1;
                fences.put(k, fence[0]);
              }
              return mine;
            });
    return after != mine
        ? AcquireResult.HELD
        : fenced ? AcquireResult.acquired(fence[0]) : AcquireResult.ACQUIRED;
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    check(key, token);
    LockNodeArguments.requireFence(atLeast);
    return Reply.of(
        ifHeldBy(
            key,
            token,
            e -> {
              fences.merge(key, atLeast, Math::max);
              return e;
            }));
  }

  @Override
  public Reply<NodeStatus> status() {
    checkOpen();
    return Reply.of(
        new NodeStatus(
            incarnation,
            Duration.ofNanos(Math.max(0, ticker.read() - startedAtNanos)),
            durable,
            Map.of("store", "in-memory (this JVM)")));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    check(key, token);
    boolean deleted = ifHeldBy(key, token, e -> null);
    if (deleted) {
      listeners.released(key); // a listener's failure does not fail the release that notified it
    }
    return Reply.of(deleted);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    long now = ticker.read();
    return Reply.of(ifHeldBy(key, token, e -> new Entry(token, now + ttl.toNanos())));
  }

  /**
   * Replaces the key's entry by {@code change} of it (null deletes it) if {@code token} holds the
   * key, atomically; drops the entry if it expired. Answers whether {@code token} held the key.
   */
  private boolean ifHeldBy(String key, String token, UnaryOperator<Entry> change) {
    long now = ticker.read();
    boolean[] held = {false};
    keys.computeIfPresent(
        key,
        (k, e) -> {
          if (expired(e, now)) {
            return null;
          }
          held[0] = e.token().equals(token);
          return held[0] ? change.apply(e) : e;
        });
    return held[0];
  }

  /**
   * Simulates a crash and restart of the store: a new incarnation, uptime from zero and, unless the
   * node is durable, every key and counter lost. Call it while no call is in flight.
   */
  public synchronized void restart() {
    if (!durable) {
      keys.clear();
      fences.clear();
      // A floor no counter handed out before can exceed: the wall clock in microseconds.
      fenceFloor = Math.max(fenceFloor, Math.multiplyExact(System.currentTimeMillis(), 1000L));
    }
    incarnation = UUID.randomUUID().toString();
    startedAtNanos = ticker.read();
    if (!durable) {
      listeners.releasedAll(); // every key is gone
    }
  }

  /** True if keys and counters survive {@link #restart()}. */
  public boolean durable() {
    return durable;
  }

  /** The token that holds {@code key} now, if any (expired keys have none). */
  public Optional<String> owner(String key) {
    return holder(key).map(KeyHolder::token);
  }

  /** The time {@code key} has left, if it is held. */
  public Optional<Duration> remainingTtl(String key) {
    return holder(key).map(KeyHolder::remainingTtl);
  }

  private Optional<KeyHolder> holder(String key) {
    Entry e = keys.get(key);
    long now = ticker.read();
    return e == null || expired(e, now)
        ? Optional.empty()
        : Optional.of(new KeyHolder(e.token(), Duration.ofNanos(e.expiresAtNanos() - now)));
  }

  /** The fencing counter of {@code key}, if a fenced acquisition or a raise ever set it. */
  public OptionalLong fence(String key) {
    Long value = fences.get(key);
    return value == null ? OptionalLong.empty() : OptionalLong.of(value);
  }

  /**
   * Sets the fencing counter of {@code key} behind the contract's back, as another client's history
   * would have; for tests that need a node whose counter is ahead of the others.
   */
  public void setFence(String key, long value) {
    if (value <= 0) {
      throw new IllegalArgumentException("a fencing counter is positive, got " + value);
    }
    keys.compute(
        key,
        (k, e) -> {
          fences.put(k, value);
          return e;
        });
  }

  /** How many keys are held now (expired ones not counted). */
  public int heldKeys() {
    long now = ticker.read();
    return (int) keys.values().stream().filter(e -> !expired(e, now)).count();
  }

  @Override
  public void close() {
    closed.set(true);
  }

  @Override
  public String toString() {
    return name;
  }

  private void check(String key, String token) {
    checkOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
  }

  private static boolean expired(Entry e, long now) {
    return now - e.expiresAtNanos() >= 0;
  }
}
