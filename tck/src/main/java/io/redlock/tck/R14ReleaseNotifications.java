package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import io.redlock.spi.ReleaseSubscription;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R14 Release notifications (if declared). */
interface R14ReleaseNotifications {

  @Test
  @DisplayName("R14.1 a release through one instance notifies a listener of another instance")
  default void r14_1_releaseNotifiesAnotherInstance(Harness h) throws InterruptedException {
    h.requireReleaseNotifications("R14.1");
    LockNode listening = h.newNode();
    LockNode releasing = h.newNode();
    String key = h.key("r14.1");
    Semaphore heard = new Semaphore(0);
    try (ReleaseSubscription subscription = listening.onRelease(key, heard::release)) {
      assertThat(subscription).as("R14.1: onRelease returned null").isNotNull();
      assertTrue(
          live(h, releasing, key, heard, "R14.1"),
          "R14.1: a listener registered 10 s ago has heard none of the releases since");
      sleepUntil(System.nanoTime() + Duration.ofSeconds(1).toNanos()); // the releasing side learns
      for (int round = 1; round <= 3; round++) {
        assertThat(acquireThenReleaseHeard(h, releasing, key, heard, NOTIFICATION_BOUND, "R14.1"))
            .as(
                "R14.1: release %d of the key once listening was heard within %s",
                round, NOTIFICATION_BOUND)
            .isTrue();
      }
    }
  }

  @Test
  @DisplayName("R14.2 closing a subscription stops its notifications, and only its own")
  default void r14_2_closeStopsNotifications(Harness h) throws InterruptedException {
    h.requireReleaseNotifications("R14.2");
    Semaphore heard = new Semaphore(0);
    Runnable listener = heard::release;
    LockNode listening = h.newNode();
    LockNode releasing = h.newNode();
    String key = h.key("r14.2");
    ReleaseSubscription first = listening.onRelease(key, listener);
    try (ReleaseSubscription second = listening.onRelease(key, listener)) {
      assertTrue(
          live(h, releasing, key, heard, "R14.2"), "R14.2: the listener never heard a release");
      sleepUntil(System.nanoTime() + Duration.ofMillis(200).toNanos());
      heard.drainPermits();
      first.close();
      first.close(); // idempotent
      assertThat(acquireThenReleaseHeard(h, releasing, key, heard, NOTIFICATION_BOUND, "R14.2"))
          .as("R14.2: the registration still open heard the release")
          .isTrue();
      sleepUntil(System.nanoTime() + Duration.ofMillis(300).toNanos());
      assertThat(heard.availablePermits())
          .as("R14.2: calls after one of two registrations was closed (expected only one)")
          .isZero();
      second.close();
      assertThat(acquireThenReleaseHeard(h, releasing, key, heard, Duration.ofMillis(500), "R14.2"))
          .as("R14.2: a listener was called after both registrations were closed")
          .isFalse();
    } finally {
      first.close();
    }
  }

  @Test
  @DisplayName("R14.3 onRelease checks its key and refuses after close")
  default void r14_3_onReleaseChecksArguments(Harness h) {
    h.requireReleaseNotifications("R14.3");
    assertThat(h.thrownByCall(() -> h.node().onRelease("", () -> {})))
        .as("R14.3: onRelease with an empty key")
        .isInstanceOf(IllegalArgumentException.class);
    h.assertRefusedAfterClose(
        "R14.3", Map.of("onRelease", n -> n.onRelease(h.key("r14.3"), () -> {})));
  }

  /**
   * Whether a listener hears one of the releases of {@code key} made for up to 10 s: a node may
   * start listening lazily, so the first releases may come before it listens.
   */
  private boolean live(Harness h, LockNode releasing, String key, Semaphore heard, String rule)
      throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    for (int i = 0; i < 50 && System.nanoTime() - deadline < 0; i++) {
      if (acquireThenReleaseHeard(h, releasing, key, heard, Duration.ofMillis(200), rule)) {
        return true;
      }
    }
    return false;
  }

  /** Acquires and releases {@code key}; true if {@code heard} got a call within {@code wait}. */
  private boolean acquireThenReleaseHeard(
      Harness h, LockNode n, String key, Semaphore heard, Duration wait, String rule)
      throws InterruptedException {
    String owner = token();
    assertTrue(h.acquire(n, key, owner, LONG_TTL), "%s: acquire the key", rule);
    heard.drainPermits();
    assertTrue(h.release(n, key, owner), "%s: release the key", rule);
    h.held.remove(new Held(key, owner));
    return heard.tryAcquire(wait.toNanos(), TimeUnit.NANOSECONDS);
  }
}
