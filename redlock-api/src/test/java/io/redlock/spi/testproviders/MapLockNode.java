package io.redlock.spi.testproviders;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A test node over a map, without expiry: enough to see which provider opened a node and whether it
 * was closed. The real reference node lives in the TCK, which depends on this module.
 */
public final class MapLockNode implements LockNode {
  private final String name;
  private final Map<String, String> keys = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  public MapLockNode(String name) {
    this.name = name;
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
    open();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    return Reply.of(AcquireResult.of(keys.putIfAbsent(key, token) == null));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    open();
    return Reply.of(keys.remove(key, token));
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    open();
    return Reply.of(token.equals(keys.get(key)));
  }

  private void open() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
  }

  public boolean isClosed() {
    return closed.get();
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
