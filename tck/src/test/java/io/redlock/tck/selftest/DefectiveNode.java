package io.redlock.tck.selftest;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.spi.support.Replies;
import io.redlock.tck.KeyInspector;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A client of an in-memory store with chosen contract bugs, each a mistake real backends make. With
 * no defects it is correct, which the self-test checks too, so that every failure the kit reports
 * for a defective node comes from its defect.
 */
final class DefectiveNode implements LockNode {

  /** The bugs a node can have. */
  enum Defect {
    /** tryAcquire reads, then writes: two racing callers can both see the key absent. */
    NON_ATOMIC_ACQUIRE,
    /** Keys never expire. */
    IGNORES_EXPIRY,
    /** release is a plain delete: any token removes the key. */
    RELEASE_IGNORES_TOKEN,
    /** extend moves the expiry of an expired key too, bringing it back. */
    EXTEND_IGNORES_EXPIRY,
    /** Bad arguments fail the reply instead of throwing from the method. */
    VALIDATES_IN_REPLY,
    /** name() shows the password of the URI the node was opened with. */
    PASSWORD_IN_NAME,
    /** Keys are compared case-insensitively, like a database's default collation. */
    CASE_INSENSITIVE_KEYS,
    /** The fencing counter is kept with the key and lost when it is released or expires. */
    FENCE_LOST_WITH_KEY,
    /** The fencing counter is read, then written, by a second command after the insert. */
    NON_ATOMIC_FENCE,
    /** raiseFence raises the counter whoever asks, even for a released or expired key. */
    RAISE_IGNORES_TOKEN,
    /** Each client caches the first status it reads: a restart of the store goes unnoticed. */
    STALE_STATUS,
    /** serverTime() reads microseconds since 1970 as milliseconds: a thousand times too late. */
    CLOCK_IN_WRONG_UNITS,
    /** serverTime() answers the first time each client read, forever. */
    CACHED_CLOCK,
    /** release reads the key (live, this token), then deletes by key alone: a round trip apart. */
    NON_ATOMIC_RELEASE,
    /** extend reads the key (live, this token), then rewrites it: a round trip apart. */
    NON_ATOMIC_EXTEND,
    /** Keys are cut to 64 characters, like a {@code varchar(64)} column. */
    KEYS_TRUNCATED_TO_64,
    /** Keys are cut to 255 characters, like a {@code varchar(255)} column. */
    KEYS_TRUNCATED_TO_255,
    /** Keys are stored by their {@code String.hashCode()}, like an advisory-lock id. */
    KEYS_HASHED_TO_32_BITS,
    /** Keys end 100 ms before their TTL. */
    EXPIRES_EARLY,
    /** A fenced acquisition of an expired key starts its counter again from the clock. */
    FENCE_LOST_ON_EXPIRY,
    /** A plain tryAcquire drops the key's counter (an upsert that writes the whole row). */
    FENCE_RESET_BY_PLAIN_ACQUIRE,
    /** status() rounds the uptime up to whole seconds. */
    UPTIME_ROUNDED_UP,
    /** inspect() shows a key whose TTL ran out, as a row the store still keeps. */
    INSPECT_IGNORES_EXPIRY
  }

  /** The shared store: one per kit, many clients. */
  static final class Store {
    private record Entry(String token, long expiresAtNanos) {}

    private final ConcurrentMap<String, Entry> keys = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Long> fences = new ConcurrentHashMap<>();
    private final Set<Defect> defects;
    private volatile String incarnation = UUID.randomUUID().toString();
    private volatile long startedAtNanos = System.nanoTime();

    Store(Set<Defect> defects) {
      this.defects = defects.isEmpty() ? EnumSet.noneOf(Defect.class) : EnumSet.copyOf(defects);
    }

    /** Reads a key as the store sees it. */
    KeyInspector inspector() {
      return key -> {
        long now = System.nanoTime();
        Entry e = keys.get(stored(key));
        return e == null || expired(e, now)
            ? Optional.empty()
            : Optional.of(
                new KeyInspector.KeyState(e.token(), Duration.ofNanos(e.expiresAtNanos() - now)));
      };
    }

    /** A crash and restart without persistence: keys and counters lost, a new incarnation. */
    synchronized void restart() {
      keys.clear();
      fences.clear();
      incarnation = UUID.randomUUID().toString();
      startedAtNanos = System.nanoTime();
    }

    private String stored(String key) {
      if (defects.contains(Defect.CASE_INSENSITIVE_KEYS)) {
        return key.toLowerCase(Locale.ROOT);
      }
      if (defects.contains(Defect.KEYS_TRUNCATED_TO_64)) {
        return key.substring(0, Math.min(key.length(), 64));
      }
      if (defects.contains(Defect.KEYS_TRUNCATED_TO_255)) {
        return key.substring(0, Math.min(key.length(), 255));
      }
      return defects.contains(Defect.KEYS_HASHED_TO_32_BITS) ? "#" + key.hashCode() : key;
    }

    /**
     * The counter after {@code counter}, as the SPI recommends: {@code max(counter + 1, time in
     * µs)}. The clock alone makes most counter defects invisible until a counter is raised past it.
     */
    private static long next(Long counter) {
      Instant now = Instant.now();
      long micros =
          Math.addExact(
              Math.multiplyExact(now.getEpochSecond(), 1_000_000L), now.getNano() / 1_000);
      return Math.max(counter == null ? 0 : counter + 1, micros);
    }

    private long expiry(long now, Duration ttl) {
      long early = defects.contains(Defect.EXPIRES_EARLY) ? Duration.ofMillis(100).toNanos() : 0;
      return now + ttl.toNanos() - early;
    }

    private boolean expired(Entry e, long now) {
      return !defects.contains(Defect.IGNORES_EXPIRY) && now - e.expiresAtNanos() >= 0;
    }
  }

  private final Store store;
  private final String name;
  private final AtomicBoolean closed = new AtomicBoolean();

  /** With {@link Defect#CACHED_CLOCK}: the first time read. */
  private volatile java.time.Instant cachedTime;

  /** With {@link Defect#STALE_STATUS}: the first status read, and the local time it was read. */
  private volatile NodeStatus cachedStatus;

  private volatile long cachedAtNanos;

  DefectiveNode(Store store, int client) {
    this.store = store;
    this.name =
        has(Defect.PASSWORD_IN_NAME)
            ? "memory://tck:hunter2@localhost/defective#" + client
            : "memory://localhost/defective#" + client;
  }

  private boolean has(Defect defect) {
    return store.defects.contains(defect);
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
        .withClock()
        .withInspection();
  }

  @Override
  public Reply<Optional<KeyHolder>> inspect(String key) {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
    LockNodeArguments.requireKey(key);
    long now = System.nanoTime();
    Store.Entry e = store.keys.get(store.stored(key));
    boolean live = e != null && (has(Defect.INSPECT_IGNORES_EXPIRY) || !store.expired(e, now));
    return Reply.of(
        live
            ? Optional.of(
                new KeyHolder(e.token(), Duration.ofNanos(Math.max(0, e.expiresAtNanos() - now))))
            : Optional.empty());
  }

  @Override
  public Reply<java.time.Instant> serverTime() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
    java.time.Instant now = java.time.Instant.now();
    if (has(Defect.CLOCK_IN_WRONG_UNITS)) {
      long micros = Math.multiplyExact(now.getEpochSecond(), 1_000_000L) + now.getNano() / 1_000;
      return Reply.of(java.time.Instant.ofEpochMilli(micros));
    }
    if (has(Defect.CACHED_CLOCK)) {
      java.time.Instant cached = cachedTime;
      if (cached == null) {
        cached = now;
        cachedTime = cached;
      }
      return Reply.of(cached);
    }
    return Reply.of(now);
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    Optional<Reply<AcquireResult>> rejected =
        validate(
            () -> {
              LockNodeArguments.requireKey(key);
              LockNodeArguments.requireToken(token);
              LockNodeArguments.requireTtl(ttl, capabilities());
            });
    if (rejected.isPresent()) {
      return rejected.get();
    }
    String k = store.stored(key);
    long now = System.nanoTime();
    Store.Entry mine = new Store.Entry(token, store.expiry(now, ttl));
    if (has(Defect.NON_ATOMIC_ACQUIRE)) {
      Store.Entry seen = store.keys.get(k);
      if (seen != null && !store.expired(seen, now)) {
        return Reply.of(AcquireResult.HELD);
      }
      pause(); // the gap between read and write where a racing caller slips in
      store.keys.put(k, mine);
      return Reply.of(AcquireResult.ACQUIRED);
    }
    Store.Entry after =
        store.keys.compute(
            k,
            (x, e) -> {
              if (e != null && !store.expired(e, now)) {
                return e;
              }
              if (has(Defect.FENCE_RESET_BY_PLAIN_ACQUIRE)) {
                store.fences.remove(x); // the upsert writes the whole row
              }
              return mine;
            });
    return Reply.of(AcquireResult.of(after == mine));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    Optional<Reply<Boolean>> rejected =
        validate(
            () -> {
              LockNodeArguments.requireKey(key);
              LockNodeArguments.requireToken(token);
            });
    if (rejected.isPresent()) {
      return rejected.get();
    }
    long now = System.nanoTime();
    if (has(Defect.NON_ATOMIC_RELEASE)) {
      Store.Entry seen = store.keys.get(store.stored(key));
      if (seen == null || store.expired(seen, now) || !seen.token().equals(token)) {
        return Reply.of(false);
      }
      roundTrip();
      store.keys.remove(store.stored(key));
      return Reply.of(true);
    }
    boolean[] deleted = {false};
    store.keys.computeIfPresent(
        store.stored(key),
        (x, e) -> {
          if (store.expired(e, now)) {
            return null;
          }
          if (has(Defect.RELEASE_IGNORES_TOKEN) || e.token().equals(token)) {
            deleted[0] = true;
            if (has(Defect.FENCE_LOST_WITH_KEY)) {
              store.fences.remove(x);
            }
            return null;
          }
          return e;
        });
    return Reply.of(deleted[0]);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    Optional<Reply<Boolean>> rejected =
        validate(
            () -> {
              LockNodeArguments.requireKey(key);
              LockNodeArguments.requireToken(token);
              LockNodeArguments.requireTtl(ttl, capabilities());
            });
    if (rejected.isPresent()) {
      return rejected.get();
    }
    long now = System.nanoTime();
    if (has(Defect.NON_ATOMIC_EXTEND)) {
      Store.Entry seen = store.keys.get(store.stored(key));
      if (seen == null || store.expired(seen, now) || !seen.token().equals(token)) {
        return Reply.of(false);
      }
      roundTrip();
      store.keys.put(
          store.stored(key), new Store.Entry(token, store.expiry(System.nanoTime(), ttl)));
      return Reply.of(true);
    }
    boolean[] extended = {false};
    store.keys.computeIfPresent(
        store.stored(key),
        (x, e) -> {
          boolean live = has(Defect.EXTEND_IGNORES_EXPIRY) || !store.expired(e, now);
          if (live && e.token().equals(token)) {
            extended[0] = true;
            return new Store.Entry(token, store.expiry(now, ttl));
          }
          return e;
        });
    return Reply.of(extended[0]);
  }

  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    Optional<Reply<AcquireResult>> rejected =
        validate(
            () -> {
              LockNodeArguments.requireKey(key);
              LockNodeArguments.requireToken(token);
              LockNodeArguments.requireTtl(ttl, capabilities());
            });
    if (rejected.isPresent()) {
      return rejected.get();
    }
    String k = store.stored(key);
    long now = System.nanoTime();
    Store.Entry mine = new Store.Entry(token, store.expiry(now, ttl));
    long[] fence = {0};
    store.keys.compute(
        k,
        (x, e) -> {
          if (e != null && !store.expired(e, now)) {
            return e;
          }
          if (has(Defect.FENCE_LOST_WITH_KEY) || (e != null && has(Defect.FENCE_LOST_ON_EXPIRY))) {
            store.fences.remove(x);
          }
          if (!has(Defect.NON_ATOMIC_FENCE)) {
            fence[0] = Store.next(store.fences.get(x));
            store.fences.put(x, fence[0]);
          } else {
            fence[0] = -1; // counted below, outside the key's lock
          }
          return mine;
        });
    if (fence[0] == 0) {
      return Reply.of(AcquireResult.HELD);
    }
    if (fence[0] < 0) {
      Long read = store.fences.get(k);
      // Longer than the key's TTL in R12.9: another acquisition of the expired key reads the same
      // value meanwhile.
      sleepMillis(10);
      fence[0] = Store.next(read);
      store.fences.put(k, fence[0]);
    }
    return Reply.of(AcquireResult.acquired(fence[0]));
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    Optional<Reply<Boolean>> rejected =
        validate(
            () -> {
              LockNodeArguments.requireKey(key);
              LockNodeArguments.requireToken(token);
              if (atLeast <= 0) {
                throw new IllegalArgumentException("atLeast must be positive, got " + atLeast);
              }
            });
    if (rejected.isPresent()) {
      return rejected.get();
    }
    String k = store.stored(key);
    if (has(Defect.RAISE_IGNORES_TOKEN)) {
      store.fences.merge(k, atLeast, Math::max);
      return Reply.of(true);
    }
    long now = System.nanoTime();
    boolean[] raised = {false};
    store.keys.computeIfPresent(
        k,
        (x, e) -> {
          if (e.token().equals(token) && !store.expired(e, now)) {
            raised[0] = true;
            store.fences.merge(x, atLeast, Math::max);
          }
          return e;
        });
    return Reply.of(raised[0]);
  }

  @Override
  public Reply<NodeStatus> status() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
    long now = System.nanoTime();
    if (has(Defect.STALE_STATUS)) {
      NodeStatus cached = cachedStatus;
      if (cached == null) {
        cached = currentStatus(now);
        cachedAtNanos = now;
        cachedStatus = cached;
      }
      return Reply.of(
          new NodeStatus(
              cached.incarnation(),
              cached.uptime().plusNanos(now - cachedAtNanos),
              false,
              cached.details()));
    }
    return Reply.of(currentStatus(now));
  }

  private NodeStatus currentStatus(long now) {
    long up = Math.max(0, now - store.startedAtNanos);
    if (has(Defect.UPTIME_ROUNDED_UP)) {
      up = (up / 1_000_000_000L + 1) * 1_000_000_000L;
    }
    return new NodeStatus(
        store.incarnation, Duration.ofNanos(up), false, Map.of("store", "defective in-memory"));
  }

  /** Checks the arguments, by throwing (correct) or by failing the reply (defect). */
  private <T> Optional<Reply<T>> validate(Runnable checks) {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
    if (!has(Defect.VALIDATES_IN_REPLY)) {
      checks.run();
      return Optional.empty();
    }
    try {
      checks.run();
      return Optional.empty();
    } catch (IllegalArgumentException e) {
      return Optional.of(Replies.of(CompletableFuture.failedFuture(e), name));
    }
  }

  private static void pause() {
    sleepMillis(1);
  }

  /** The time between two statements of a non-atomic operation on a remote store. */
  private static void roundTrip() {
    sleepMillis(5);
  }

  private static void sleepMillis(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    closed.set(true);
  }

  @Override
  public String toString() {
    return name;
  }
}
