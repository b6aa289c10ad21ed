package io.redlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.ReleaseSubscription;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Release notifications on real redis-servers: what the compatibility kit's R14 does not cover (the
 * subscriber's recovery, ACLs, close; waiters of {@code Redlock.acquire} are in integration-tests,
 * RedisReleaseNotificationWaiterTest).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("RedisLockNode release notifications on real redis-servers")
class RedisReleaseNotificationsTest {
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
    return closeLater(RedisLockNode.fromUri(servers.get(server).uri() + "?keyPrefix=notify-test:"));
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
  @DisplayName("the subscriber subscribes again after its connection is killed")
  void resubscribesAfterConnectionLoss() throws Exception {
    RedisLockNode listening = node(0);
    RedisLockNode releasing = node(0);
    String key = key();
    Semaphore heard = new Semaphore(0);
    try (ReleaseSubscription s = listening.onRelease(key, heard::release)) {
      awaitTrue(listening::releaseSubscriberReady, Duration.ofSeconds(10), "subscribed");
      assertThat(servers.get(0).command("CLIENT", "KILL", "TYPE", "pubsub")).isNotNull();
      awaitTrue(listening::releaseSubscriberReady, Duration.ofSeconds(10), "subscribed again");
      heard.drainPermits();
      String token = UUID.randomUUID().toString();
      assertThat(releasing.tryAcquire(key, token, TTL).await(TTL).acquired()).isTrue();
      assertThat(releasing.release(key, token).await(TTL)).isTrue();
      assertThat(heard.tryAcquire(5, TimeUnit.SECONDS))
          .as("a release after the subscriber connection was killed is heard")
          .isTrue();
    }
  }

  @Test
  @DisplayName("a user whose ACL forbids the release channel still releases")
  void releaseWithoutChannelPermission() {
    RedisServer server = servers.get(1);
    String user = "nochannels-" + UUID.randomUUID().toString().substring(0, 8);
    assertThat(server.command("ACL", "SETUSER", user, "on", ">pw", "~*", "resetchannels", "+@all"))
        .isEqualTo("+OK");
    try (RedisLockNode n =
        RedisLockNode.fromUri("redis://" + user + ":pw@" + server.host() + ":" + server.port())) {
      String key = key();
      String token = UUID.randomUUID().toString();
      assertThat(n.tryAcquire(key, token, TTL).await(TTL).acquired()).isTrue();
      assertThat(n.release(key, token).await(TTL)).isTrue();
      assertThat(n.tryAcquire(key, "next", TTL).await(TTL).acquired())
          .as("the key was deleted")
          .isTrue();
      n.release(key, "next").await(TTL);
    } finally {
      server.command("ACL", "DELUSER", user);
    }
  }

  @Test
  @DisplayName("closing the node stops its subscriber thread")
  void closeStopsTheSubscriber() throws Exception {
    RedisLockNode n = RedisLockNode.fromUri(servers.get(2).uri());
    n.onRelease(key(), () -> {});
    awaitTrue(n::releaseSubscriberReady, Duration.ofSeconds(10), "subscribed");
    String threadName = " " + n.name();
    n.close();
    awaitTrue(
        () ->
            Thread.getAllStackTraces().keySet().stream()
                .noneMatch(
                    t ->
                        t.getName().startsWith("redlock-redis-notify-")
                            && t.getName().endsWith(threadName)
                            && t.isAlive()),
        Duration.ofSeconds(5),
        "the subscriber thread has ended");
    assertThat(n.releaseSubscriberReady()).isFalse();
  }
}
