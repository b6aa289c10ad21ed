package io.redlock.spi.support;

import io.redlock.spi.LockNode;
import io.redlock.spi.ReleaseSubscription;
import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The listeners of a node that pushes release notifications ({@link LockNode#onRelease}), by key:
 * what every such backend keeps between the store's notifications and the engine's waiters.
 * Thread-safe; the same listener may be registered twice (each registration is its own, closed by
 * its own subscription). A listener that throws is logged at DEBUG and does not stop the others.
 *
 * @param <K> how the backend names a key in its notifications (the stored key, a hash, ...)
 */
public final class ReleaseListeners<K> {
  private static final System.Logger LOG = System.getLogger(ReleaseListeners.class.getName());

  private final String node;
  private final ConcurrentMap<K, Set<Runnable>> byKey = new ConcurrentHashMap<>();

  /**
   * @param node the node's redacted name, for log lines
   */
  public ReleaseListeners(String node) {
    this.node = Objects.requireNonNull(node, "node");
  }

  /**
   * Registers {@code listener} for {@code key}.
   *
   * @return the subscription whose {@code close()} (idempotent) removes this registration only
   */
  public ReleaseSubscription register(K key, Runnable listener) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(listener, "listener");
    Runnable mine = listener::run; // a fresh identity per registration
    byKey.compute(
        key,
        (k, set) -> {
          Set<Runnable> out = set != null ? set : ConcurrentHashMap.newKeySet();
          out.add(mine);
          return out;
        });
    AtomicBoolean closed = new AtomicBoolean();
    return () -> {
      if (closed.compareAndSet(false, true)) {
        byKey.computeIfPresent(
            key,
            (k, set) -> {
              set.remove(mine);
              return set.isEmpty() ? null : set;
            });
      }
    };
  }

  /** Calls the listeners of {@code key} (none if nobody listens for it). */
  public void released(K key) {
    Set<Runnable> set = key == null ? null : byKey.get(key);
    if (set != null) {
      set.forEach(this::runQuietly);
    }
  }

  /**
   * Calls every listener: after the backend (re)subscribed, when releases may have been missed, or
   * when the store lost every key. A spurious call costs a waiter one early retry.
   */
  public void releasedAll() {
    byKey.values().forEach(set -> set.forEach(this::runQuietly));
  }

  /** The keys somebody listens for. */
  public Set<K> keys() {
    return Set.copyOf(byKey.keySet());
  }

  private void runQuietly(Runnable listener) {
    try {
      listener.run();
    } catch (RuntimeException e) {
      LOG.log(Level.DEBUG, () -> node + ": a release listener failed: " + e);
    }
  }
}
