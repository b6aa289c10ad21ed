package io.redlock.spring.boot;

import io.redlock.redis.RedisLockNode;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Test backend for the scheme {@code counting://}: a real Redis node ({@code counting://} read as
 * {@code redis://}) that counts how often it is closed, so that tests can see who closes the nodes
 * the starter opens, and how many times.
 */
public final class CountingRedisNodeProvider implements LockNodeProvider {
  /** Every node opened through this provider, in order. */
  static final List<CountingNode> OPENED = new CopyOnWriteArrayList<>();

  /** {@code counting://...} for a {@code redis://...} URI. */
  static String counting(String redisUri) {
    return "counting" + redisUri.substring("redis".length());
  }

  @Override
  public Set<String> schemes() {
    return Set.of("counting");
  }

  @Override
  public LockNode open(NodeUri uri) {
    CountingNode node =
        new CountingNode(RedisLockNode.fromUri("redis" + uri.raw().substring("counting".length())));
    OPENED.add(node);
    return node;
  }

  /** A Redis node that counts its close() calls. */
  static final class CountingNode implements LockNode {
    private final RedisLockNode delegate;
    final AtomicInteger closes = new AtomicInteger();
    final AtomicInteger clockReads = new AtomicInteger();
    final AtomicInteger statusReads = new AtomicInteger();

    CountingNode(RedisLockNode delegate) {
      this.delegate = delegate;
    }

    @Override
    public String name() {
      return delegate.name();
    }

    @Override
    public NodeCapabilities capabilities() {
      return delegate.capabilities();
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      return delegate.tryAcquire(key, token, ttl);
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return delegate.release(key, token);
    }

    @Override
    public Reply<Boolean> extend(String key, String token, Duration ttl) {
      return delegate.extend(key, token, ttl);
    }

    @Override
    public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
      return delegate.tryAcquireFenced(key, token, ttl);
    }

    @Override
    public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
      return delegate.raiseFence(key, token, atLeast);
    }

    @Override
    public Reply<NodeStatus> status() {
      statusReads.incrementAndGet();
      return delegate.status();
    }

    @Override
    public Reply<Instant> serverTime() {
      clockReads.incrementAndGet();
      return delegate.serverTime();
    }

    @Override
    public Reply<Optional<KeyHolder>> inspect(String key) {
      return delegate.inspect(key);
    }

    @Override
    public ReleaseSubscription onRelease(String key, Runnable listener) {
      return delegate.onRelease(key, listener);
    }

    @Override
    public void close() {
      closes.incrementAndGet();
      delegate.close();
    }
  }
}
