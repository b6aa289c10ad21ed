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

  /** PUBLISH commands the server ran so far (from INFO commandstats). */
  private static long publishes(RedisServer server) {
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("cmdstat_publish:calls=(\\d+)")
            .matcher(server.command("INFO", "commandstats"));
    return m.find() ? Long.parseLong(m.group(1)) : 0;
  }

  @Test
  @DisplayName(
      "a release publishes only while somebody subscribes to the release channel, and the node"
          + " notices a new subscriber within a moment")
  void publishesOnlyWhenSomebodyListens() throws Exception {
    RedisServer server = RedisServers.start(1).get(0);
    closeLater(server);
    RedisLockNode releasing =
        closeLater(RedisLockNode.fromUri(server.uri() + "?keyPrefix=quiet-test:"));
    // the first releases find out that nobody listens
    for (int i = 0; i < 5; i++) {
      String k = key();
      String t = UUID.randomUUID().toString();
      assertThat(releasing.tryAcquire(k, t, TTL).await(Duration.ofSeconds(5)).acquired()).isTrue();
      assertThat(releasing.release(k, t).await(Duration.ofSeconds(5))).isTrue();
      Thread.sleep(60);
    }
    long quietBefore = publishes(server);
    long began = System.nanoTime();
    for (int i = 0; i < 20; i++) {
      String k = key();
      String t = UUID.randomUUID().toString();
      releasing.tryAcquire(k, t, TTL).await(Duration.ofSeconds(5));
      assertThat(releasing.release(k, t).await(Duration.ofSeconds(5))).isTrue();
    }
    // a release made without an answer from the last 100 ms publishes (somebody may listen by
    // now) while the node asks again: a few per 100 ms of the loop, however slow the machine
    long windows = 1 + (System.nanoTime() - began) / 100_000_000L;
    assertThat(publishes(server) - quietBefore)
        .as("publishes with nobody listening, in %d windows of 100 ms", windows)
        .isLessThanOrEqualTo(Math.min(3 * windows, 15));

    RedisLockNode listening =
        closeLater(RedisLockNode.fromUri(server.uri() + "?keyPrefix=quiet-test:"));
    String watched = key();
    Semaphore heard = new Semaphore(0);
    closeLater(listening.onRelease(watched, heard::release));
    awaitTrue(listening::releaseSubscriberReady, Duration.ofSeconds(10), "subscribed");
    // counted from here: the loop above may have published while the node was unsure, before
    // anybody subscribed, and such a publish says nothing about the node having seen the subscriber
    long subscribedAt = publishes(server);
    // a "nobody" asked before the subscription holds for 100 ms, and a release within them may be
    // missed (the contract: the waiter polls then); the releases below come after that
    Thread.sleep(200);
    String token = UUID.randomUUID().toString();
    releasing.tryAcquire(watched, token, TTL).await(Duration.ofSeconds(5));
    awaitTrue(
        () -> {
          // each release renews the node's view of the subscribers every 100 ms or so
          String k = key();
          String t = UUID.randomUUID().toString();
          releasing.tryAcquire(k, t, TTL).await(Duration.ofSeconds(5));
          releasing.release(k, t).await(Duration.ofSeconds(5));
          return publishes(server) > subscribedAt;
        },
        Duration.ofSeconds(10),
        "releases publish again");
    heard.drainPermits();
    assertThat(releasing.release(watched, token).await(Duration.ofSeconds(5))).isTrue();
    assertThat(heard.tryAcquire(10, TimeUnit.SECONDS))
        .as("the listener heard the release")
        .isTrue();
  }
}
