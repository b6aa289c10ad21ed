package io.redlock.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Closing: idempotent, and no thread of the node outlives it. */
@DisplayName("Lifecycle")
class LifecycleTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(10);

  private static List<Thread> vertxThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().startsWith("vert.x-"))
        .toList();
  }

  private static PostgresLockNode node() {
    return PostgresLockNode.fromUri(
        TestServers.uri(TestServers.plain()) + "&redlock.createTable=true");
  }

  @Test
  @DisplayName("the shared Vert.x threads are daemons, and end when the last node closes")
  void threadsEndWithTheLastNode() throws Exception {
    PostgresLockNode a = node();
    PostgresLockNode b = node();
    String t = UUID.randomUUID().toString();
    assertThat(a.tryAcquire("life", t, TTL).await(WAIT).acquired()).isTrue();
    assertThat(b.tryAcquire("life", "other", TTL).await(WAIT).acquired()).isFalse();
    assertThat(vertxThreads()).isNotEmpty().allSatisfy(th -> assertThat(th.isDaemon()).isTrue());
    assertThat(a.release("life", t).await(WAIT)).isTrue();
    a.close();
    a.close(); // idempotent
    assertThat(b.tryAcquire("life", t, TTL).await(WAIT).acquired())
        .as("the other node still works")
        .isTrue();
    assertThat(b.release("life", t).await(WAIT)).isTrue();
    b.close();
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!vertxThreads().isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(vertxThreads()).as("Vert.x threads after the last close").isEmpty();
    assertThatThrownBy(() -> a.tryAcquire("life", t, TTL))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    assertThatThrownBy(b::status).isInstanceOf(IllegalStateException.class);
  }

  @Test
  @DisplayName("a Vert.x instance passed in is used and never closed by the node")
  void callersVertxStaysOpen() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      try (PostgresLockNode node =
          PostgresLockNode.builder()
              .uri(TestServers.uri(TestServers.plain()) + "&redlock.createTable=true")
              .vertx(vertx)
              .build()) {
        String t = UUID.randomUUID().toString();
        assertThat(node.tryAcquire("mine", t, TTL).await(WAIT).acquired()).isTrue();
        assertThat(node.release("mine", t).await(WAIT)).isTrue();
      }
      assertThat(vertx.setTimer(1, id -> {})).as("still usable").isPositive();
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get();
    }
  }
}
