package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.KeepAlive;
import io.redlock.Lease;
import io.redlock.LeaseLost;
import io.redlock.LeaseLostException;
import io.redlock.RedlockSettings;
import io.redlock.Ticker;
import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Keep-alive, loss and {@code checkValid} on in-memory nodes with the system's clock: these run on
 * real schedules. Short TTLs, generous bounds (a busy machine delays schedules).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("The lease lifecycle")
class LeaseLifecycleTest {
  private static final Duration TTL = Duration.ofMillis(600);
  private static final RedlockSettings SETTINGS =
      RedlockSettings.defaults()
          .withNodeTimeout(Duration.ofMillis(50))
          .withRetry(1, Duration.ZERO, Duration.ZERO);

  private static QuorumRedlock redlock(List<LiveNode> nodes, RedlockSettings settings) {
    return new QuorumRedlock(
        List.<LockNode>copyOf(nodes),
        settings,
        Ticker.system(),
        Sleeper.SYSTEM,
        new java.util.Random(1),
        false,
        io.redlock.RedlockListener.NONE);
  }

  /** Polls {@code condition} every 10 ms for up to 10 s. */
  private static boolean eventually(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(10);
    }
    return true;
  }

  private static long count(List<String> log, String text) {
    return log.stream().filter(l -> l.contains(text)).count();
  }

  @Nested
  @DisplayName("keep-alive")
  class KeepAliveTests {

    @Test
    @DisplayName("extends every third of the TTL while held, so the lease outlives its TTL")
    void outlivesItsTtl() throws Exception {
      List<String> log = LiveNode.newLog();
      try (QuorumRedlock redlock = redlock(LiveNode.nodes(3, log), SETTINGS)) {
        Lease lease = redlock.tryAcquire("kept", TTL).orElseThrow().keepAlive();
        Thread.sleep(3 * TTL.toMillis());

        assertThat(lease.isValid()).isTrue();
        assertThat(lease.extensions()).isGreaterThanOrEqualTo(4);
        assertThat(redlock.tryAcquire("kept", TTL)).as("still held").isEmpty();
        lease.release();
        assertThat(redlock.tryAcquire("kept", TTL)).isPresent();
      }
    }

    @Test
    @DisplayName("sends no extension once release() returned, even racing scheduled extensions")
    void noExtensionAfterRelease() throws Exception {
      List<String> log = LiveNode.newLog();
      try (QuorumRedlock redlock = redlock(LiveNode.nodes(3, log), SETTINGS)) {
        List<Lease> leases = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
          leases.add(
              redlock
                  .tryAcquire("race-" + i, TTL)
                  .orElseThrow()
                  .keepAlive(KeepAlive.defaults().every(Duration.ofMillis(1))));
        }
        Thread.sleep(50);
        List<String> releasedMarks = new CopyOnWriteArrayList<>();
        for (Lease lease : leases) {
          lease.release();
          log.add("0 released " + lease.token()); // after release() returned
          releasedMarks.add(lease.token());
        }
        Thread.sleep(100);
        for (String token : releasedMarks) {
          int released = log.indexOf("0 released " + token);
          for (int i = released + 1; i < log.size(); i++) {
            assertThat(log.get(i)).as("after the release of %s", token).doesNotContain(token);
          }
        }
        assertThat(count(log, " extend ")).as("extensions before the releases").isPositive();
      }
    }

    @Test
    @DisplayName("sends no extension once the Redlock is closed, and tells the lease it is lost")
    void noExtensionAfterClose() throws Exception {
      List<String> log = LiveNode.newLog();
      QuorumRedlock redlock = redlock(LiveNode.nodes(3, log), SETTINGS);
      Lease lease =
          redlock
              .tryAcquire("closed", TTL)
              .orElseThrow()
              .keepAlive(KeepAlive.defaults().every(Duration.ofMillis(2)));
      CompletableFuture<LeaseLost> lost = lease.whenLost().toCompletableFuture();
      Thread.sleep(30);
      redlock.close();
      int after = log.size();
      Thread.sleep(100);

      assertThat(log).hasSize(after);
      assertThat(lost.get(5, TimeUnit.SECONDS).reason()).isEqualTo(LeaseLost.Reason.CLOSED);
    }

    @Test
    @DisplayName("stops once the application drops every reference to the lease")
    void stopsWhenUnreferenced() throws Exception {
      List<String> log = LiveNode.newLog();
      try (QuorumRedlock redlock = redlock(LiveNode.nodes(3, log), SETTINGS)) {
        dropAKeptAliveLease(redlock);
        long quiet = 0;
        for (int i = 0; i < 200 && quiet < 5; i++) {
          System.gc();
          int before = log.size();
          Thread.sleep(20);
          quiet = log.size() == before ? quiet + 1 : 0;
        }
        assertThat(quiet).as("rounds of 20 ms without an extension").isGreaterThanOrEqualTo(5);
      }
    }

    private void dropAKeptAliveLease(QuorumRedlock redlock) {
      redlock
          .tryAcquire("dropped", TTL)
          .orElseThrow()
          .keepAlive(KeepAlive.defaults().every(Duration.ofMillis(2)));
    }

    @Test
    @DisplayName(
        "stops at the maximum hold time, after which the lease runs out and is reported EXPIRED")
    void maxHold() throws Exception {
      List<String> log = LiveNode.newLog();
      try (QuorumRedlock redlock = redlock(LiveNode.nodes(3, log), SETTINGS)) {
        Lease lease =
            redlock
                .tryAcquire("bounded", TTL)
                .orElseThrow()
                .keepAlive(KeepAlive.defaults().maxHold(Duration.ofMillis(400)));
        CompletableFuture<LeaseLost> lost = lease.whenLost().toCompletableFuture();

        LeaseLost why = lost.get(10, TimeUnit.SECONDS);
        assertThat(why.reason()).isEqualTo(LeaseLost.Reason.EXPIRED);
        assertThat(lease.isValid()).isFalse();
        assertThat(lease.extensions()).isBetween(1, 3);
      }
    }

    @Test
    @DisplayName("keeps to maxExtensions unless told to ignore it within a maximum hold time")
    void maxExtensions() throws Exception {
      List<String> log = LiveNode.newLog();
      try (QuorumRedlock redlock = redlock(LiveNode.nodes(3, log), SETTINGS.withMaxExtensions(2))) {
        Lease bounded =
            redlock
                .tryAcquire("two", TTL)
                .orElseThrow()
                .keepAlive(KeepAlive.defaults().every(Duration.ofMillis(20)));
        Lease unbounded =
            redlock
                .tryAcquire("more", TTL)
                .orElseThrow()
                .keepAlive(
                    KeepAlive.defaults()
                        .every(Duration.ofMillis(20))
                        .maxHold(Duration.ofSeconds(30))
                        .ignoringMaxExtensions());
        assertThat(eventually(() -> unbounded.extensions() >= 6)).isTrue();

        assertThat(bounded.extensions()).isEqualTo(2);
        assertThat(unbounded.isValid()).isTrue();
      }
    }
  }

  @Nested
  @DisplayName("the loss signal")
  class Loss {

    @Test
    @DisplayName(
        "fires once, UNREACHABLE, on a library thread, while at least the margin of validity is"
            + " left, when the nodes stop answering")
    void unreachableWithMargin() throws Exception {
      List<String> log = LiveNode.newLog();
      List<LiveNode> nodes = LiveNode.nodes(3, log);
      try (QuorumRedlock redlock = redlock(nodes, SETTINGS)) {
        Duration margin = Duration.ofMillis(200);
        Lease lease =
            redlock
                .tryAcquire("unreachable", TTL)
                .orElseThrow()
                .keepAlive(KeepAlive.defaults().lostMargin(margin));
        List<String> threads = new CopyOnWriteArrayList<>();
        List<Long> leftAtLoss = new CopyOnWriteArrayList<>();
        CountDownLatch fired = new CountDownLatch(1);
        lease.onLost(
            l -> {
              threads.add(Thread.currentThread().getName() + " " + l.reason());
              fired.countDown();
            });
        lease.whenLost().thenRun(() -> leftAtLoss.add(lease.remainingValidity().toMillis()));
        nodes.get(0).down(true);
        nodes.get(1).down(true);
        long downAt = System.nanoTime();

        assertThat(fired.await(10, TimeUnit.SECONDS)).isTrue();
        long firedAfter = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - downAt);
        Thread.sleep(TTL.toMillis());
        assertThat(threads).hasSize(1);
        assertThat(threads.get(0)).startsWith("redlock-lost-listener").endsWith("UNREACHABLE");
        assertThat(firedAfter).as("fired before the validity ran out").isLessThan(TTL.toMillis());
        assertThat(lease.isValid()).isFalse();
        assertThatThrownBy(lease::checkValid)
            .isInstanceOf(LeaseLostException.class)
            .hasMessageContaining("UNREACHABLE")
            .hasMessageContaining("live-0");
      }
    }

    @Test
    @DisplayName("says TOKEN_GONE when a majority answers that the key holds another token")
    void tokenGone() throws Exception {
      List<String> log = LiveNode.newLog();
      List<LiveNode> nodes = LiveNode.nodes(3, log);
      try (QuorumRedlock redlock = redlock(nodes, SETTINGS)) {
        Lease lease = redlock.tryAcquire("gone", TTL).orElseThrow().keepAlive();
        CompletableFuture<LeaseLost> lost = lease.whenLost().toCompletableFuture();
        nodes.get(0).store.release("gone", lease.token()).await(Duration.ofSeconds(1));
        nodes.get(1).store.release("gone", lease.token()).await(Duration.ofSeconds(1));

        assertThat(lost.get(10, TimeUnit.SECONDS).reason()).isEqualTo(LeaseLost.Reason.TOKEN_GONE);
      }
    }

    @Test
    @DisplayName("fires EXPIRED at the end of the validity of a lease that is not kept alive")
    void expired() throws Exception {
      try (QuorumRedlock redlock = redlock(LiveNode.nodes(3, LiveNode.newLog()), SETTINGS)) {
        Lease lease = redlock.tryAcquire("expires", Duration.ofMillis(200)).orElseThrow();
        CompletableFuture<LeaseLost> lost = lease.whenLost().toCompletableFuture();

        assertThat(lost.get(10, TimeUnit.SECONDS).reason()).isEqualTo(LeaseLost.Reason.EXPIRED);
        assertThat(lease.remainingValidity()).isZero();
        assertThatThrownBy(lease::checkValid).isInstanceOf(LeaseLostException.class);
      }
    }

    @Test
    @DisplayName("never fires after a release; checkValid then says RELEASED")
    void notAfterRelease() throws Exception {
      try (QuorumRedlock redlock = redlock(LiveNode.nodes(3, LiveNode.newLog()), SETTINGS)) {
        Lease lease = redlock.tryAcquire("released", Duration.ofMillis(200)).orElseThrow();
        CompletableFuture<LeaseLost> lost = lease.whenLost().toCompletableFuture();
        lease.checkValid();
        lease.release();
        Thread.sleep(400);

        assertThat(lost).isNotDone();
        assertThatThrownBy(lease::checkValid)
            .isInstanceOfSatisfying(
                LeaseLostException.class,
                e -> assertThat(e.lost().reason()).isEqualTo(LeaseLost.Reason.RELEASED));
      }
    }

    @Test
    @DisplayName("runs a listener added after the loss at once")
    void lateListener() throws Exception {
      try (QuorumRedlock redlock = redlock(LiveNode.nodes(3, LiveNode.newLog()), SETTINGS)) {
        Lease lease = redlock.tryAcquire("late", Duration.ofMillis(100)).orElseThrow();
        lease.whenLost().toCompletableFuture().get(10, TimeUnit.SECONDS);
        CompletableFuture<LeaseLost> heard = new CompletableFuture<>();
        lease.onLost(heard::complete);

        assertThat(heard.get(10, TimeUnit.SECONDS).reason()).isEqualTo(LeaseLost.Reason.EXPIRED);
      }
    }
  }
}
