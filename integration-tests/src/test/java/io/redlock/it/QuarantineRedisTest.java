package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.Redlock;
import io.redlock.RedlockBuilder;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Restart quarantine on three real Redis servers: a node killed and restarted without persistence
 * while a lock is held forgets the lock; without quarantine a second client then takes the same
 * lock (two holders at once), with quarantine it does not.
 *
 * <p>The scenario: client 1 holds the lock on A and B (C refused it because a stale key of another
 * client was still there, which then expired). B crashes and restarts empty. Client 2 asks A, B and
 * C: A refuses (client 1 holds it), B and C grant, a majority of two.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@DisplayName("Restart quarantine on three real Redis nodes")
class QuarantineRedisTest {
  /** The lock TTL, and the maximum TTL of the quarantine. */
  private static final Duration TTL = Duration.ofSeconds(4);

  private static RedlockBuilder client(RedisServers servers) {
    return Redlock.builder()
        .nodeUris(servers.uris())
        // generous for a busy 2-core machine; the default (TTL/50) is for production networks
        .nodeTimeout(Duration.ofMillis(500))
        .retry(1, Duration.ZERO, Duration.ZERO);
  }

  private static String resource() {
    return "quarantine-" + UUID.randomUUID();
  }

  /**
   * Client 1 takes {@code resource} on A and B only, then B crashes and restarts without its data.
   */
  private static Lease holdOnAAndBThenRestartB(
      RedisServers servers, Redlock client1, String resource) throws InterruptedException {
    RedisServer c = servers.get(2);
    assertThat(c.command("SET", resource, "another-client", "PX", "60000")).isEqualTo("+OK");
    // A and B must both grant it: attempts until they do (one may miss its node timeout on a
    // busy machine)
    Lease lease = client1.acquire(resource, TTL, Duration.ofSeconds(10));
    assertThat(servers.get(0).command("GET", resource)).isEqualTo(lease.token());
    assertThat(servers.get(1).command("GET", resource)).isEqualTo(lease.token());
    assertThat(c.command("DEL", resource)).as("the stale key on C expires").isEqualTo(":1");

    servers.get(1).kill();
    servers.get(1).restart();
    assertThat(servers.get(1).command("GET", resource)).as("B forgot the lock").isNull();
    assertThat(lease.isValid()).as("client 1 still holds its lease").isTrue();
    return lease;
  }

  /** Polls until every node has been up long enough to vote under quarantine; at most 15 s. */
  private static void awaitQuarantineOver(Redlock redlock) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (System.nanoTime() - deadline < 0) {
      Optional<Lease> probe = redlock.tryAcquire(resource(), TTL);
      if (probe.isPresent() && probe.get().quarantinedNodes().isEmpty()) {
        probe.get().release();
        return;
      }
      probe.ifPresent(Lease::release);
      Thread.sleep(200);
    }
    throw new AssertionError("the nodes never left restart quarantine");
  }

  @Test
  @DisplayName("without quarantine, a second client takes the lock after a restart: two holders")
  void withoutQuarantineTwoHolders() throws Exception {
    try (RedisServers servers = RedisServers.start(3, RedisServer.builder().faultInjection());
        Redlock client1 = client(servers).build();
        // retries: its first call to B may meet a connection that B's restart broke
        Redlock client2 =
            client(servers).retry(5, Duration.ofMillis(20), Duration.ofMillis(50)).build()) {
      String resource = resource();
      Lease first = holdOnAAndBThenRestartB(servers, client1, resource);

      Optional<Lease> second = client2.tryAcquire(resource, TTL);

      assertThat(second).as("the safety violation that quarantine prevents").isPresent();
      assertThat(first.isValid() && second.get().isValid())
          .as("both leases valid at once")
          .isTrue();
    }
  }

  @Test
  @DisplayName("with quarantine, the restarted node's vote does not count: the lock stays held")
  void withQuarantineOneHolder() throws Exception {
    try (RedisServers servers = RedisServers.start(3, RedisServer.builder().faultInjection());
        Redlock client1 = client(servers).restartQuarantine(TTL).build();
        Redlock client2 =
            client(servers)
                .restartQuarantine(TTL)
                .retry(5, Duration.ofMillis(20), Duration.ofMillis(50))
                .build()) {
      // Freshly started servers are young too: wait until they have been up for the max TTL.
      awaitQuarantineOver(client1);
      awaitQuarantineOver(client2);
      String resource = resource();
      Lease first = holdOnAAndBThenRestartB(servers, client1, resource);

      assertThat(client2.tryAcquire(resource, TTL)).as("client 2 must not get the lock").isEmpty();
      assertThatThrownBy(() -> client2.acquire(resource, TTL, Duration.ZERO))
          .isInstanceOf(LockTimeoutException.class)
          .hasMessageContaining("restart quarantine leaves out")
          .hasMessageContaining(
              servers.get(1).address() + "/0 (restarted without durable lock state");
      assertThat(first.isValid()).isTrue();
      assertThat(servers.get(0).command("GET", resource)).isEqualTo(first.token());
      first.release();
    }
  }

  @Test
  @DisplayName(
      "durable nodes (AOF, appendfsync always) vote at once and keep the lock across a"
          + " restart")
  void durableNodesAreNotQuarantined() {
    try (RedisServers servers =
            RedisServers.start(3, RedisServer.builder().appendOnly().faultInjection());
        Redlock client1 = client(servers).restartQuarantine(Duration.ofMinutes(5)).build();
        Redlock client2 = client(servers).restartQuarantine(Duration.ofMinutes(5)).build()) {
      String resource = resource();
      Lease first = client1.tryAcquire(resource, TTL).orElseThrow(); // just started, durable

      servers.get(1).kill();
      servers.get(1).restart();

      assertThat(servers.get(1).command("GET", resource)).isEqualTo(first.token());
      assertThat(client2.tryAcquire(resource, TTL)).isEmpty();
      assertThat(first.quarantinedNodes()).isEmpty();
      first.release();
    }
  }
}
