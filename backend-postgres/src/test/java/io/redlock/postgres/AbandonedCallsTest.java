package io.redlock.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.Reply;
import io.redlock.tck.KeyInspector;
import io.redlock.testservers.PostgresServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The abandon contract on a frozen server ({@code SIGSTOP}): a call still waiting for a connection
 * when the engine gives up on it is dropped, never written; a call already written is read to its
 * end when the server answers again, and its connection serves the next calls.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("Abandoned calls on a frozen server")
class AbandonedCallsTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static PostgresServer server;

  @BeforeAll
  static void start() {
    server = PostgresServer.startLocal();
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  private static String token() {
    return UUID.randomUUID().toString();
  }

  @Test
  @DisplayName("an unsent call is dropped, a sent one ends with its late answer")
  void unsentDroppedSentReadToItsEnd() throws Exception {
    String table = TestServers.uniqueTable("abandon");
    try (PostgresLockNode node =
            PostgresLockNode.fromUri(
                TestServers.uri(server)
                    + "&redlock.createTable=true&redlock.poolSize=1&redlock.pipeliningLimit=1"
                    + "&redlock.table="
                    + table);
        KeyInspector inspector = TestServers.inspector(server.jdbcUrl(), table)) {
      String warm = token();
      assertThat(node.tryAcquire("warm", warm, TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.release("warm", warm).await(WAIT)).isTrue();

      server.pause();
      Reply<AcquireResult> sent;
      Reply<AcquireResult> queued;
      try {
        sent = node.tryAcquire("sent", token(), TTL); // written on the one connection
        queued = node.tryAcquire("queued", token(), TTL); // waits: the connection is full
        assertThatThrownBy(() -> sent.await(Duration.ofMillis(50)))
            .isInstanceOf(NodeTimeoutException.class);
        assertThatThrownBy(() -> queued.await(Duration.ofMillis(50)))
            .isInstanceOf(NodeTimeoutException.class);
        CompletableFuture<AcquireResult> queuedEnd = new CompletableFuture<>();
        queued.abandon(queuedEnd::complete);
        assertThat(queuedEnd).as("dropped: ended at once, without an answer").isDone();
        assertThat(queuedEnd.get()).isNull();

        CompletableFuture<AcquireResult> sentEnd = new CompletableFuture<>();
        sent.abandon(sentEnd::complete);
        Thread.sleep(200);
        assertThat(sentEnd).as("still waiting for the frozen server").isNotDone();
        server.resume();
        assertThat(sentEnd.get(5, TimeUnit.SECONDS)).isEqualTo(AcquireResult.ACQUIRED);
      } finally {
        server.resume();
      }
      // the late answer was read and the connection is used again at once
      String t = token();
      assertThat(node.tryAcquire("after", t, TTL).await(Duration.ofSeconds(1)).acquired()).isTrue();
      assertThat(inspector.inspect("sent")).isPresent();
      assertThat(inspector.inspect("queued")).as("the dropped call was never written").isEmpty();
    }
  }

  @Test
  @DisplayName("calls on a server frozen past the query timeout fail, and the node recovers")
  void frozenPastTheQueryTimeout() throws Exception {
    String table = TestServers.uniqueTable("frozen");
    try (PostgresLockNode node =
        PostgresLockNode.fromUri(
            TestServers.uri(server)
                + "&redlock.createTable=true&redlock.queryTimeout=200ms&redlock.table="
                + table)) {
      String warm = token();
      assertThat(node.tryAcquire("warm", warm, TTL).await(WAIT).acquired()).isTrue();
      server.pause();
      List<CompletableFuture<AcquireResult>> ends = new ArrayList<>();
      AtomicInteger failed = new AtomicInteger();
      try {
        for (int i = 0; i < 20; i++) {
          Reply<AcquireResult> r = node.tryAcquire("k" + i, token(), TTL);
          try {
            r.await(Duration.ofMillis(5));
          } catch (NodeTimeoutException e) {
            CompletableFuture<AcquireResult> end = new CompletableFuture<>();
            r.abandon(end::complete);
            ends.add(end);
          } catch (RedlockTransientException e) {
            failed.incrementAndGet(); // on a busy machine: queued past the connection timeout
          }
        }
        // a call awaited long enough fails: its connection is given up on after 200 ms + 1 s
        // ("no answer"), or, queued behind full connections, when no new one opens in 2 s
        assertThatThrownBy(() -> node.release("warm", warm).await(WAIT))
            .isInstanceOf(RedlockTransientException.class);
        for (CompletableFuture<AcquireResult> end : ends) {
          assertThat(end.get(5, TimeUnit.SECONDS)).isNull();
          failed.incrementAndGet();
        }
      } finally {
        server.resume();
      }
      assertThat(failed.get()).isEqualTo(20);
      // a fresh connection serves the next calls. A connection attempt started while the server
      // was frozen may still end in its connection timeout (2 s) and fail a call or two made just
      // after the thaw; the node is back within that bound.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      RedlockTransientException last = null;
      boolean acquired = false;
      for (int i = 0; !acquired && System.nanoTime() - deadline < 0; i++) {
        try {
          acquired = node.tryAcquire("after" + i, token(), TTL).await(WAIT).acquired();
        } catch (RedlockTransientException e) {
          last = e;
          Thread.sleep(50);
        }
      }
      assertThat(acquired).as("recovered after the thaw; last failure: %s", last).isTrue();
    }
  }
}
