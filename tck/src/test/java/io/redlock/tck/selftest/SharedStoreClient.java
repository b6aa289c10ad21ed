package io.redlock.tck.selftest;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One client of a shared {@link InMemoryLockNode}: what {@code createNode()} must return, a new
 * instance with its own lifecycle on the same store. Closing a client does not close the store.
 */
final class SharedStoreClient implements LockNode {
  private final InMemoryLockNode store;
  private final String name;
  private final AtomicBoolean closed = new AtomicBoolean();

  /** Declares release notifications but never sends one (a defect for the kit to catch). */
  private final boolean silent;

  SharedStoreClient(InMemoryLockNode store, String name) {
    this(store, name, false);
  }

  SharedStoreClient(InMemoryLockNode store, String name, boolean silent) {
    this.store = store;
    this.name = name;
    this.silent = silent;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public NodeCapabilities capabilities() {
    return store.capabilities();
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    checkOpen();
    return store.tryAcquire(key, token, ttl);
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    checkOpen();
    return store.release(key, token);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    checkOpen();
    return store.extend(key, token, ttl);
  }

  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    checkOpen();
    return store.tryAcquireFenced(key, token, ttl);
  }

  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    checkOpen();
    return store.raiseFence(key, token, atLeast);
  }

  @Override
  public Reply<NodeStatus> status() {
    checkOpen();
    return store.status();
  }

  @Override
  public ReleaseSubscription onRelease(String key, Runnable listener) {
    checkOpen();
    if (silent) {
      io.redlock.spi.LockNodeArguments.requireKey(key);
      return () -> {};
    }
    return store.onRelease(key, listener);
  }

  @Override
  public Reply<java.time.Instant> serverTime() {
    checkOpen();
    return store.serverTime();
  }

  @Override
  public void close() {
    closed.set(true);
  }

  @Override
  public String toString() {
    return name;
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
  }
}
