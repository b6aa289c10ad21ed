package com.example.redlock;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A lock node on a store held in this JVM's memory: the shape of a backend, to be replaced by calls
 * to your store. Every operation is one atomic step ({@code ConcurrentMap.compute}), and expiry runs
 * on the store's own clock (here {@code System.nanoTime}) from a relative TTL. A store over the
 * network answers later: return the {@link Reply} at once and complete it when the answer comes
 * (or hand a blocking driver's call to {@code Replies.supplyAsync}).
 */
public final class ExampleLockNode implements LockNode {
  /** Every node opened on a store name sees the same keys: one "server" per name. */
  private static final ConcurrentMap<String, ConcurrentMap<String, Entry>> STORES =
      new ConcurrentHashMap<>();

  private record Entry(String token, long expiresAtNanos) {
    boolean live(long now) {
      return now - expiresAtNanos < 0;
    }
  }

  private final String name;
  private final ConcurrentMap<String, Entry> keys;
  private final AtomicBoolean closed = new AtomicBoolean();

  /** A new client of the store called {@code store}. */
  public ExampleLockNode(String store) {
    this.name = "example://" + store;
    this.keys = STORES.computeIfAbsent(store, s -> new ConcurrentHashMap<>());
  }

  @Override
  public String name() {
    return name; // never a password: build it from NodeUri.redacted() in a real backend
  }

  @Override
  public NodeCapabilities capabilities() {
    return NodeCapabilities.millisecondPrecision();
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    long now = System.nanoTime();
    Entry mine = new Entry(token, now + ttl.toNanos());
    Entry after = keys.compute(key, (k, e) -> e != null && e.live(now) ? e : mine);
    return Reply.of(AcquireResult.of(after == mine));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    check(key, token);
    long now = System.nanoTime();
    boolean[] deleted = {false};
    keys.computeIfPresent(
        key,
        (k, e) -> {
          deleted[0] = e.live(now) && e.token().equals(token);
          return deleted[0] || !e.live(now) ? null : e;
        });
    return Reply.of(deleted[0]);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    long now = System.nanoTime();
    boolean[] extended = {false};
    keys.computeIfPresent(
        key,
        (k, e) -> {
          extended[0] = e.live(now) && e.token().equals(token);
          return extended[0] ? new Entry(token, now + ttl.toNanos()) : e;
        });
    return Reply.of(extended[0]);
  }

  @Override
  public void close() {
    closed.set(true); // idempotent; the keys stay in the store until they expire
  }

  @Override
  public String toString() {
    return name;
  }

  /** Closed state and arguments first, by throwing, before anything reaches the store. */
  private void check(String key, String token) {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
  }
}
