package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.Reply;
import io.redlock.tck.InMemoryLockNode;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A quorum where only some nodes push release notifications (Redis beside MongoDB, say): the
 * holder's release, reported by a notifying node, must wake the waiter at once, whichever nodes the
 * waiter's own failed attempt took and released. Real threads; the waiter's poll is 3 s, so a grant
 * within 1.5 s of the release can only come from the notification.
 */
class MixedNotificationTest {

  /** An in-memory node that declares no notifications and can refuse calls for a while. */
  private static final class Plain implements LockNode {
    private final InMemoryLockNode store;
    volatile boolean down;

    Plain(String name) {
      this.store = new InMemoryLockNode(name);
    }

    @Override
    public String name() {
      return store.name();
    }

    @Override
    public NodeCapabilities capabilities() {
      return new NodeCapabilities(store.capabilities().ttlPrecision());
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      if (down) {
        return Reply.failed(new RedlockTransientException(name(), "down for the test", null));
      }
      return store.tryAcquire(key, token, ttl);
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return store.release(key, token);
    }

    @Override
    public Reply<Boolean> extend(String key, String token, Duration ttl) {
      return store.extend(key, token, ttl);
    }

    @Override
    public void close() {
      store.close();
    }
  }

  @ParameterizedTest(name = "the holder held {0} of 3 nodes")
  @ValueSource(ints = {3, 2})
  void theHoldersReleaseWakesTheWaiter(int heldNodes) throws Exception {
    InMemoryLockNode notifying = new InMemoryLockNode("n0");
    assertThat(notifying.capabilities().releaseNotifications()).isTrue();
    Plain n1 = new Plain("n1");
    Plain n2 = new Plain("n2");
    List<LockNode> nodes = List.of(notifying, n1, n2);
    try (Redlock holderSide =
            Redlock.builder().nodes(nodes).retry(1, Duration.ZERO, Duration.ZERO).build();
        Redlock waiterSide =
            Redlock.builder()
                .nodes(nodes)
                .retry(3, Duration.ofSeconds(3), Duration.ofSeconds(3))
                .build()) {
      n2.down = heldNodes == 2; // the holder takes n0 and n1 only
      Lease held = holderSide.tryAcquire("k", Duration.ofSeconds(30)).orElseThrow();
      n2.down = false; // the waiter's attempts take n2, and release it: an echo-free node
      AtomicLong grantedAt = new AtomicLong();
      Thread waiter =
          new Thread(
              () -> {
                try (Lease lease =
                    waiterSide.acquire("k", Duration.ofSeconds(30), Duration.ofSeconds(20))) {
                  grantedAt.set(System.nanoTime());
                } catch (Exception e) {
                  throw new AssertionError(e);
                }
              });
      waiter.start();
      Thread.sleep(500); // its first attempt failed; it pauses for 3 s
      long releasedAt = System.nanoTime();
      held.release();
      waiter.join(30_000);
      assertThat(grantedAt.get()).as("the waiter was granted the lock").isNotZero();
      assertThat(Duration.ofNanos(grantedAt.get() - releasedAt))
          .as("release -> grant, with the poll at 3 s")
          .isLessThan(Duration.ofMillis(1_500));
    }
  }
}
