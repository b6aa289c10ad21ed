package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodes;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.ReleaseSubscription;
import io.redlock.spi.Reply;
import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The engine starts each fan-out with the node that keeps it waiting longest, as measured, whatever
 * order the nodes were listed in, and a node that stops answering last. On real servers, some
 * behind a proxy that delays what it forwards (a node farther away) or holds it (a stalled node).
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@DisplayName("The measured node order on real servers")
class MeasuredNodeOrderTest {
  /** Cycles the order gets to settle in; a cycle here takes well under 10 ms. */
  private static final int MAX_CYCLES = 3_000;

  /** Consecutive acquisitions that must start on the expected node. */
  private static final int SETTLED = 50;

  /** Passes every call to a real node and notes which node an acquisition started on first. */
  private static final class Recording implements LockNode {
    private final LockNode node;
    private final List<String> starts;

    Recording(LockNode node, List<String> starts) {
      this.node = node;
      this.starts = starts;
    }

    @Override
    public String name() {
      return node.name();
    }

    @Override
    public NodeCapabilities capabilities() {
      return node.capabilities();
    }

    @Override
    public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
      starts.add(node.name());
      return node.tryAcquire(key, token, ttl);
    }

    @Override
    public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
      starts.add(node.name());
      return node.tryAcquireFenced(key, token, ttl);
    }

    @Override
    public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
      return node.raiseFence(key, token, atLeast);
    }

    @Override
    public Reply<NodeStatus> status() {
      return node.status();
    }

    @Override
    public Reply<Instant> serverTime() {
      return node.serverTime();
    }

    @Override
    public ReleaseSubscription onRelease(String key, Runnable listener) {
      return node.onRelease(key, listener);
    }

    @Override
    public Reply<Boolean> release(String key, String token) {
      return node.release(key, token);
    }

    @Override
    public Reply<Boolean> extend(String key, String token, Duration ttl) {
      return node.extend(key, token, ttl);
    }

    @Override
    public void close() {
      node.close();
    }
  }

  @Test
  @DisplayName("a Redis node that stops answering, listed first, goes last, and locks go on")
  void stalledNodeGoesLast() throws Exception {
    try (RedisServers redis = RedisServers.start(3, RedisServer.builder());
        FreezableProxy proxy = new FreezableProxy("127.0.0.1", redis.get(0).port())) {
      List<String> uris = new ArrayList<>();
      uris.add(redis.get(0).uri().replace(":" + redis.get(0).port(), ":" + proxy.port()));
      uris.addAll(redis.uris().subList(1, 3));
      List<String> starts = new ArrayList<>();
      List<LockNode> nodes = new ArrayList<>();
      for (LockNode node : LockNodes.discover().openAll(uris)) {
        nodes.add(new Recording(node, starts));
      }
      String stalled = nodes.get(0).name();
      try (Redlock redlock = Redlock.builder().nodes(nodes).build()) {
        Lease warm = redlock.tryAcquire("stall-warm", Duration.ofSeconds(10)).orElseThrow();
        assertThat(warm.release().deleted()).isEqualTo(3);
        assertThat(starts.get(0)).isEqualTo(stalled);

        proxy.freeze(true);
        int lastOnStalled = 0;
        for (int i = 0; i < 60; i++) {
          starts.clear();
          Lease lease = redlock.tryAcquire("stall-" + i, Duration.ofSeconds(10)).orElseThrow();
          lease.release();
          lastOnStalled = starts.get(starts.size() - 1).equals(stalled) ? lastOnStalled + 1 : 0;
        }
        assertThat(lastOnStalled)
            .as("acquisitions in a row, at the end, that started the stalled node last")
            .isGreaterThanOrEqualTo(50);
      }
    }
  }

  @Test
  @DisplayName("a PostgreSQL node 2 ms away, listed last, is soon started first, and stays first")
  void farNodeStartsFirst() throws Exception {
    try (RedisServers redis = RedisServers.start(3, RedisServer.builder());
        PostgresServer near = PostgresServer.startLocal();
        PostgresServer far = PostgresServer.startLocal()) {
      URI direct = URI.create(far.jdbcUrl().substring("jdbc:".length()));
      try (FreezableProxy proxy = new FreezableProxy(direct.getHost(), direct.getPort())) {
        proxy.delay(Duration.ofMillis(1));
        String viaProxy =
            far.jdbcUrl().replace(":" + direct.getPort() + "/", ":" + proxy.port() + "/");
        List<String> uris = new ArrayList<>(redis.uris());
        uris.add(near.jdbcUrl() + "&redlock.createTable=true");
        uris.add(viaProxy + "&redlock.createTable=true");

        List<String> starts = new ArrayList<>(); // one thread: no locking needed
        List<LockNode> nodes = new ArrayList<>();
        for (LockNode node : LockNodes.discover().openAll(uris)) {
          nodes.add(new Recording(node, starts));
        }
        String farName = nodes.get(4).name();
        try (Redlock redlock = Redlock.builder().nodes(nodes).build()) {
          assertThat(redlock.nodes().get(4)).isEqualTo(farName);

          int firstOnFar = 0;
          int cycles = 0;
          List<String> firsts = new ArrayList<>();
          while (firstOnFar < SETTLED && cycles < MAX_CYCLES) {
            starts.clear();
            Lease lease =
                redlock.tryAcquire("order-" + cycles, Duration.ofSeconds(10)).orElseThrow();
            // the far node's first calls may miss the 50 ms node timeout while it connects
            assertThat(lease.release().deleted()).isGreaterThanOrEqualTo(redlock.quorum());
            cycles++;
            firsts.add(starts.get(0));
            firstOnFar = starts.get(0).equals(farName) ? firstOnFar + 1 : 0;
          }
          assertThat(firstOnFar)
              .as(
                  "the far node should lead %d acquisitions in a row within %d cycles; first"
                      + " nodes of the last ones: %s",
                  SETTLED, MAX_CYCLES, firsts.subList(Math.max(0, cycles - 10), cycles))
              .isEqualTo(SETTLED);
          // listed first, a Redis node started the first acquisitions
          assertThat(firsts.get(0)).isEqualTo(redlock.nodes().get(0));
        }
      }
    }
  }
}
