package io.redlock.tck;

import io.redlock.Ticker;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeArguments;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A lock node held in this JVM's memory: the reference implementation of the {@link LockNode}
 * contract, and a node for unit tests. Expiry follows the given {@link Ticker}, so a test can move
 * time forward by hand. Not a distributed lock: it excludes threads of one JVM only.
 */
public final class InMemoryLockNode implements LockNode {
  private record Entry(String token, long expiresAtNanos) {}

  private final String name;
  private final Ticker ticker;
  private final ConcurrentMap<String, Entry> keys = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  /** A node named {@code name} whose expiry follows {@code ticker}. */
  public InMemoryLockNode(String name, Ticker ticker) {
    this.name = Objects.requireNonNull(name, "name");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  /** A node on the system's monotonic clock. */
  public InMemoryLockNode(String name) {
    this(name, Ticker.system());
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public NodeCapabilities capabilities() {
    return NodeCapabilities.millisecondPrecision();
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    long now = ticker.read();
    Entry mine = new Entry(token, now + ttl.toNanos());
    Entry after = keys.compute(key, (k, e) -> e == null || expired(e, now) ? mine : e);
    return Reply.of(AcquireResult.of(after == mine));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    check(key, token);
    long now = ticker.read();
    boolean[] deleted = {false};
    keys.computeIfPresent(
        key,
        (k, e) -> {
          if (e.token().equals(token) && !expired(e, now)) {
            deleted[0] = true;
            return null;
          }
          return expired(e, now) ? null : e;
        });
    return Reply.of(deleted[0]);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    long now = ticker.read();
    boolean[] extended = {false};
    keys.computeIfPresent(
        key,
        (k, e) -> {
          if (e.token().equals(token) && !expired(e, now)) {
            extended[0] = true;
            return new Entry(token, now + ttl.toNanos());
          }
          return e;
        });
    return Reply.of(extended[0]);
  }

  /** The token that holds {@code key} now, if any (expired keys have none). */
  public Optional<String> owner(String key) {
    Entry e = keys.get(key);
    return e == null || expired(e, ticker.read()) ? Optional.empty() : Optional.of(e.token());
  }

  /** The time {@code key} has left, if it is held. */
  public Optional<Duration> remainingTtl(String key) {
    Entry e = keys.get(key);
    long now = ticker.read();
    return e == null || expired(e, now)
        ? Optional.empty()
        : Optional.of(Duration.ofNanos(e.expiresAtNanos() - now));
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
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
  }

  private static boolean expired(Entry e, long now) {
    return now - e.expiresAtNanos() >= 0;
  }
}
