package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.redis.RedisLockNode;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Release notifications through the public API: a waiter wakes on a release, not on its poll. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("Redlock.acquire waiters on real redis-servers hear releases")
class RedisReleaseNotificationWaiterTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static RedisServers servers;
  private final List<AutoCloseable> closing = new ArrayList<>();

  @BeforeAll
  static void startServers() {
    servers = RedisServers.start(3);
  }

  @AfterAll
  static void stopServers() {
    if (servers != null) {
      servers.close();
    }
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : closing) {
      c.close();
    }
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    closing.add(c);
    return c;
  }

  private RedisLockNode node(int server) {
    return RedisLockNode.fromUri(servers.get(server).uri() + "?keyPrefix=notify-test:");
  }

  private static String key() {
    return "resource-" + UUID.randomUUID();
  }

  private static void awaitTrue(BooleanSupplier condition, Duration bound, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + bound.toNanos();
    for (int i = 0; i < 1000 && !condition.getAsBoolean(); i++) {
      assertThat(System.nanoTime() - deadline).as("timed out waiting until %s", what).isNegative();
      Thread.sleep(10);
    }
    assertThat(condition.getAsBoolean()).as(what).isTrue();
  }

  @Test
  @DisplayName(
      "a waiter in Redlock.acquire, polling every 5 s, gets the lock soon after another client"
          + " releases it")
  void aWaiterIsGrantedSoonAfterARelease() throws Exception {
    Duration slowPolling = Duration.ofSeconds(5);
    Redlock holder =
        closeLater(
            Redlock.builder()
                .nodes(node(0), node(1), node(2))
                .retry(3, slowPolling, slowPolling)
                .build());
    List<RedisLockNode> waiterNodes = List.of(node(0), node(1), node(2));
    Redlock waiter =
        closeLater(Redlock.builder().nodes(waiterNodes).retry(3, slowPolling, slowPolling).build());
    String key = key();
    Lease held = holder.acquire(key, TTL, Duration.ZERO);
    long[] grantedAt = {0};
    CompletableFuture<Lease> granted =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                Lease lease = waiter.acquire(key, TTL, Duration.ofSeconds(60));
                grantedAt[0] = System.nanoTime();
                return lease;
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
            });
    // The waiter's first attempt fails, it subscribes (the first registration connects) and parks.
    awaitTrue(
        () -> waiterNodes.stream().allMatch(RedisLockNode::releaseSubscriberReady),
        Duration.ofSeconds(10),
        "the waiter's nodes have subscribed");
    Thread.sleep(300); // past the retry after the subscription's own wakeup: parked for 5 s now

    long released = System.nanoTime();
    held.release();
    Lease lease = granted.get(30, TimeUnit.SECONDS);

    long waitedMillis = TimeUnit.NANOSECONDS.toMillis(grantedAt[0] - released);
    assertThat(waitedMillis)
        .as("release -> grant to the waiter, ms (its polling pause is 5000 ms)")
        .isLessThan(1_000);
    assertThat(lease.isValid()).isTrue();
    lease.release();
  }
}
