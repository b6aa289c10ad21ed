package io.redlock.tck.selftest;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.tck.KeyInspector;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A correct client of a store whose clock ticks in whole seconds: it reads "now" as a whole second,
 * so a key it sets may start up to a second late by that clock. It declares a {@code ttlPrecision}
 * of 1 s, rounds every TTL up to whole seconds and adds one more, and reports its uptime and time
 * rounded down to the second. The kit must pass it: every timing rule scales with the declared
 * precision.
 */
final class CoarseClockNode implements LockNode {
  private static final long SECOND = 1_000_000_000L;

  /** The shared store: one per kit, many clients. */
  static final class Store {
    private record Entry(String token, long expiresAtSecond) {}

    private final ConcurrentMap<String, Entry> keys = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Long> fences = new ConcurrentHashMap<>();
    private volatile String incarnation = UUID.randomUUID().toString();
    private volatile long startedAtNanos = System.nanoTime();

    /** The store's clock: whole seconds. */
    private static long now() {
      return Math.floorDiv(System.nanoTime(), SECOND);
    }

    /** The TTL in whole seconds, rounded up, plus the second that "now" may lag behind. */
    private static long expiry(Duration ttl) {
      return now() + (ttl.toNanos() + SECOND - 1) / SECOND + 1;
    }

    private static boolean live(Entry e) {
      return e != null && now() < e.expiresAtSecond();
    }

    /** Reads a key in whole seconds, as the store sees it. */
    KeyInspector inspector() {
      return key -> {
        Entry e = keys.get(key);
        return live(e)
            ? Optional.of(
                new KeyInspector.KeyState(
                    e.token(), Duration.ofSeconds(e.expiresAtSecond() - now())))
            : Optional.empty();
      };
    }

    /**
     * A crash and restart without persistence. It comes back no sooner than the next second: its
     * counters start again from the clock in whole seconds, which must be past every second the
     * lost counters were taken in.
     */
    synchronized void restart() {
      try {
        Thread.sleep(1000 - System.currentTimeMillis() % 1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      keys.clear();
      fences.clear();
      incarnation = UUID.randomUUID().toString();
      startedAtNanos = System.nanoTime();
    }
  }

  private final Store store;
  private final String name;
  private final AtomicBoolean closed = new AtomicBoolean();

  CoarseClockNode(Store store, int client) {
    this.store = store;
    this.name = "coarse://localhost/#" + client;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public NodeCapabilities capabilities() {
    return new NodeCapabilities(Duration.ofSeconds(1)).withFencing().withStatus().withClock();
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    Store.Entry mine = new Store.Entry(token, Store.expiry(ttl));
    return Reply.of(
        AcquireResult.of(store.keys.compute(key, (k, e) -> live(e) ? e : mine) == mine));
  }

  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    Store.Entry mine = new Store.Entry(token, Store.expiry(ttl));
    long[] fence = {0};
    store.keys.compute(
        key,
        (k, e) -> {
          if (live(e)) {
            return e;
          }
          long micros = Instant.now().getEpochSecond() * 1_000_000L;
          fence[0] = store.fences.merge(k, micros, (old, clock) -> Math.max(old + 1, clock));
          return mine;
        });
    return Reply.of(fence[0] > 0 ? AcquireResult.acquired(fence[0]) : AcquireResult.HELD);
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    check(key, token);
    if (atLeast <= 0) {
      throw new IllegalArgumentException("atLeast must be positive, got " + atLeast);
    }
    boolean[] raised = {false};
    store.keys.computeIfPresent(
        key,
        (k, e) -> {
          if (live(e) && e.token().equals(token)) {
            raised[0] = true;
            store.fences.merge(k, atLeast, Math::max);
          }
          return e;
        });
    return Reply.of(raised[0]);
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    check(key, token);
    boolean[] deleted = {false};
    store.keys.computeIfPresent(
        key,
        (k, e) -> {
          deleted[0] = live(e) && e.token().equals(token);
          return deleted[0] || !live(e) ? null : e;
        });
    return Reply.of(deleted[0]);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    boolean[] extended = {false};
    store.keys.computeIfPresent(
        key,
        (k, e) -> {
          extended[0] = live(e) && e.token().equals(token);
          return extended[0] ? new Store.Entry(token, Store.expiry(ttl)) : e;
        });
    return Reply.of(extended[0]);
  }

  @Override
  public Reply<NodeStatus> status() {
    checkOpen();
    long up = (System.nanoTime() - store.startedAtNanos) / SECOND; // rounded down
    return Reply.of(
        new NodeStatus(store.incarnation, Duration.ofSeconds(up), false, Map.of("clock", "1 s")));
  }

  @Override
  public Reply<Instant> serverTime() {
    checkOpen();
    return Reply.of(Instant.now().truncatedTo(ChronoUnit.SECONDS));
  }

  @Override
  public void close() {
    closed.set(true);
  }

  @Override
  public String toString() {
    return name;
  }

  private static boolean live(Store.Entry e) {
    return Store.live(e);
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
}
