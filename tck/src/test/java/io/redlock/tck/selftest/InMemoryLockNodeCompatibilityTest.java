package io.redlock.tck.selftest;

import io.redlock.spi.LockNode;
import io.redlock.tck.InMemoryLockNode;
import io.redlock.tck.KeyInspector;
import io.redlock.tck.LockNodeCompatibilityKit;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;

/**
 * The reference node passes the whole kit, every optional hook included. Each {@code createNode()}
 * is a separate client of one shared store; the unreachable node makes real TCP connections to a
 * closed loopback port.
 */
@DisplayName("InMemoryLockNode passes the compatibility kit")
class InMemoryLockNodeCompatibilityTest extends LockNodeCompatibilityKit {
  static final String PASSWORD = "s3cret-pw";
  private static final InMemoryLockNode STORE = new InMemoryLockNode("memory:tck-store");
  private static final AtomicInteger CLIENTS = new AtomicInteger();

  @Override
  protected LockNode createNode() {
    return new SharedStoreClient(STORE, "memory:tck-store#" + CLIENTS.incrementAndGet());
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

  @Override
  protected Optional<LockNode> createUnreachableNode() {
    return Optional.of(new TcpProbeNode(closedPort(), TcpProbeNode.Mode.REPORTS_FAILURE, PASSWORD));
  }

  @Override
  protected Optional<String> configuredSecret() {
    return Optional.of(PASSWORD);
  }

  @Override
  protected boolean restartStore() {
    STORE.restart();
    return true;
  }

  /** A loopback port that was free a moment ago: nothing listens there. */
  static int closedPort() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
