package io.redlock.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.jdbc.JdbcLockNode;
import io.redlock.spi.LockNode;
import io.redlock.spi.ReleaseSubscription;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * A JDBC node ({@code jdbc:postgresql:}, over pgjdbc) and a reactive node ({@code postgresql://})
 * on one database and table are two views of the same locks: same key hashing, token encoding,
 * fencing counters, release marker and notification channel.
 */
@DisplayName("A reactive node and a JDBC node share a table")
class SharesTableWithJdbcNodesTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(10);

  private String table;
  private JdbcLockNode jdbc;
  private PostgresLockNode vertx;

  @BeforeEach
  void open() {
    table = TestServers.uniqueTable("interop");
    jdbc =
        JdbcLockNode.builder(TestServers.plain().jdbcUrl())
            .table(table)
            .createTable(true)
            .releaseNotifications(true)
            .build();
    vertx =
        PostgresLockNode.builder()
            .uri(TestServers.uri(TestServers.plain()))
            .table(table)
            .createTable(true)
            .releaseNotifications(true)
            .build();
  }

  @AfterEach
  void close() {
    jdbc.close();
    vertx.close();
  }

  private static String token() {
    return UUID.randomUUID().toString();
  }

  @Test
  @DisplayName("a key taken by one is held for the other, and only the right token frees it")
  void locksAreShared() {
    String a = token();
    String b = token();
    String key = "shared ключ " + token();
    assertThat(vertx.tryAcquire(key, a, TTL).await(WAIT).acquired()).isTrue();
    assertThat(jdbc.tryAcquire(key, b, TTL).await(WAIT).acquired()).isFalse();
    assertThat(jdbc.release(key, b).await(WAIT)).isFalse();
    assertThat(jdbc.extend(key, b, TTL).await(WAIT)).isFalse();
    assertThat(jdbc.extend(key, a, TTL).await(WAIT)).isTrue();
    assertThat(jdbc.release(key, a).await(WAIT)).isTrue();

    assertThat(jdbc.tryAcquire(key, b, TTL).await(WAIT).acquired()).isTrue();
    assertThat(vertx.tryAcquire(key, a, TTL).await(WAIT).acquired()).isFalse();
    assertThat(vertx.release(key, a).await(WAIT)).isFalse();
    assertThat(vertx.extend(key, a, TTL).await(WAIT)).isFalse();
    assertThat(vertx.extend(key, b, TTL).await(WAIT)).isTrue();
    assertThat(vertx.release(key, b).await(WAIT)).isTrue();
    assertThat(jdbc.release(key, b).await(WAIT)).isFalse();
  }

  @Test
  @DisplayName("fencing counters are shared: each node's next counter exceeds the other's")
  void fencingCountersAreShared() {
    String key = "fenced-" + token();
    long previous = 0;
    LockNode[] order = {jdbc, vertx, vertx, jdbc, vertx};
    for (LockNode node : order) {
      String t = token();
      long fence = node.tryAcquireFenced(key, t, TTL).await(WAIT).fence();
      assertThat(fence).as("counter from %s", node.name()).isGreaterThan(previous);
      previous = fence;
      // released by the other node: the row (and its counter) is kept, not deleted
      LockNode other = node == jdbc ? vertx : jdbc;
      assertThat(other.tryAcquire(key, token(), TTL).await(WAIT).acquired()).isFalse();
      assertThat(other.release(key, t).await(WAIT)).isTrue();
    }
    // a counter raised through one node is seen by the other's next fenced acquisition
    String t = token();
    long fence = vertx.tryAcquireFenced(key, t, TTL).await(WAIT).fence();
    assertThat(jdbc.raiseFence(key, t, fence + 1_000_000).await(WAIT)).isTrue();
    assertThat(vertx.release(key, t).await(WAIT)).isTrue();
    assertThat(vertx.tryAcquireFenced(key, token(), TTL).await(WAIT).fence())
        .isGreaterThan(fence + 1_000_000);
  }

  @Test
  @DisplayName("a release through either node notifies the listeners of the other")
  void releasesNotifyAcrossBackends() throws Exception {
    for (LockNode[] pair : new LockNode[][] {{jdbc, vertx}, {vertx, jdbc}}) {
      LockNode releaser = pair[0];
      LockNode listener = pair[1];
      String key = "notified-" + token();
      String t = token();
      assertThat(releaser.tryAcquire(key, t, TTL).await(WAIT).acquired()).isTrue();
      CountDownLatch first = new CountDownLatch(1);
      ReleaseSubscription subscribed = listener.onRelease(key, first::countDown);
      CountDownLatch released = new CountDownLatch(1);
      ReleaseSubscription waiting = null;
      try {
        // the first call comes when the listener (re)subscribes; wait for it, then release
        assertThat(first.await(10, TimeUnit.SECONDS)).as("subscribed").isTrue();
        waiting = listener.onRelease(key, released::countDown);
        assertThat(releaser.release(key, t).await(WAIT)).isTrue();
        assertThat(released.await(10, TimeUnit.SECONDS))
            .as("%s heard the release by %s", listener.name(), releaser.name())
            .isTrue();
      } finally {
        subscribed.close();
        if (waiting != null) {
          waiting.close();
        }
      }
    }
  }
}
