package io.redlock.engine.internal;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import io.redlock.tck.InMemoryLockNode;
import io.redlock.tck.KeyInspector;
import io.redlock.tck.LockNodeCompatibilityKit;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.DisplayName;

/**
 * The compatibility kit against the reference {@link InMemoryLockNode} the engine's tests build on:
 * if the reference node broke the contract, the engine's tests would prove little.
 *
 * <p>The kit wants a new client per {@link #createNode()} call, all on one store; an in-memory node
 * is its own store, so each call returns a {@link Client} view of one shared node: every operation
 * goes to that node, and only the lifecycle (close) belongs to the view.
 */
@DisplayName("InMemoryLockNode passes the compatibility kit")
class InMemoryLockNodeCompatibilityTest extends LockNodeCompatibilityKit {
  private static final InMemoryLockNode STORE = new InMemoryLockNode("memory");

  @Override
  protected LockNode createNode() {
    return new Client(STORE);
  }

  @Override
  protected boolean restartStore() {
    STORE.restart();
    return true;
  }

  @Override
  protected Optional<KeyInspector> keyInspector() {
    return Optional.of(
        key ->
            STORE
                .owner(key)
                .flatMap(
                    owner ->
                        STORE.remainingTtl(key).map(ttl -> new KeyInspector.KeyState(owner, ttl))));
  }

  /** One client of the shared in-memory store, closable on its own. */
  private static final class Client implements LockNode {
    private final InMemoryLockNode store;
    private final AtomicBoolean closed = new AtomicBoolean();

    Client(InMemoryLockNode store) {
      this.store = store;
    }

    @Override
    public String name() {
      return store.name();
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
    public void close() {
      closed.set(true);
    }

    @Override
    public String toString() {
      return store.name();
    }

    private void checkOpen() {
      if (closed.get()) {
        throw new IllegalStateException(store.name() + " is closed");
      }
    }
  }
}
