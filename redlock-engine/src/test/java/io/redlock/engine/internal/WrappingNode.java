package io.redlock.engine.internal;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.Reply;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * An in-memory node whose lock calls (tryAcquire, release, extend) go through {@link #wrap}: the
 * base of test nodes that log, queue or delay their calls and replies.
 */
abstract class WrappingNode implements LockNode {
  final InMemoryLockNode store;

  WrappingNode(InMemoryLockNode store) {
    this.store = store;
  }

  /** Makes the call, {@code call.get()} being the store's own, and returns its reply. */
  abstract <T> Reply<T> wrap(Supplier<Reply<T>> call);

  @Override
  public String name() {
    return store.name();
  }

  @Override
  public NodeCapabilities capabilities() {
    return store.capabilities();
  }

  @Override
  public Reply<io.redlock.spi.NodeStatus> status() {
    return store.status();
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    return wrap(() -> store.tryAcquire(key, token, ttl));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    return wrap(() -> store.release(key, token));
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    return wrap(() -> store.extend(key, token, ttl));
  }

  @Override
  public void close() {
    store.close();
  }
}
