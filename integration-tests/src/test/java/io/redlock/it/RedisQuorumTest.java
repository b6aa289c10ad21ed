package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.ReleaseOutcome;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Redlock through the public API only ({@code Redlock.builder().nodes(uri...)}, backends found by
 * URI scheme) on five real Redis servers.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@DisplayName("Redlock on five real Redis nodes")
class RedisQuorumTest {
  private static final Duration TTL = Duration.ofSeconds(10);

  private static Redlock redlock(RedisServers servers) {
    return Redlock.builder()
        .nodeUris(servers.uris())
        // generous for a busy 2-core machine; the default (TTL/50) is for production networks
        .nodeTimeout(Duration.ofMillis(500))
        .retry(3, Duration.ofMillis(5), Duration.ofMillis(30))
        .build();
  }

  private static String resource() {
    return "it-" + UUID.randomUUID();
  }

  /**
   * Polls until no server holds {@code resource}, for at most 10 s; returns those that still do.
   */
  private static List<String> holdersAfterSettling(RedisServers servers, String resource)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      List<String> holders = new ArrayList<>();
      for (RedisServer server : servers) {
        if (server.isRunning() && server.command("GET", resource) != null) {
          holders.add(server.address());
        }
      }
      if (holders.isEmpty() || System.nanoTime() > deadline) {
        return holders;
      }
      Thread.sleep(50);
    }
  }

  @Test
  @DisplayName("threads incrementing a non-atomic counter under the lock lose no update")
  void mutualExclusionUnderContention() throws Exception {
    int threads = 6;
    int incrementsPerThread = 15;
    try (RedisServers servers = RedisServers.start(5);
        Redlock redlock = redlock(servers)) {
      String resource = resource();
      int[] counter = {0}; // deliberately unsynchronised: only the lock protects it
      AtomicInteger inside = new AtomicInteger();
      AtomicInteger mostInside = new AtomicInteger();
      Queue<Throwable> problems = new ConcurrentLinkedQueue<>();
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          done.add(
              pool.submit(
                  () -> {
                    for (int i = 0; i < incrementsPerThread; i++) {
                      try (Lease lease = redlock.acquire(resource, TTL, Duration.ofSeconds(60))) {
                        int now = inside.incrementAndGet();
                        mostInside.accumulateAndGet(now, Math::max);
                        int read = counter[0];
                        Thread.sleep(1); // widen the window a lost update needs
                        counter[0] = read + 1;
                        inside.decrementAndGet();
                      } catch (Exception | AssertionError e) {
                        problems.add(e);
                        return;
                      }
                    }
                  }));
        }
        for (Future<?> f : done) {
          f.get(150, TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }
      assertThat(problems).isEmpty();
      assertThat(mostInside.get()).as("threads inside the lock at once").isEqualTo(1);
      synchronized (counter) {
        assertThat(counter[0]).isEqualTo(threads * incrementsPerThread);
      }
      assertThat(holdersAfterSettling(servers, resource)).isEmpty();
    }
  }

  @Test
  @DisplayName("with 2 of 5 nodes killed, the lock is still acquired and released on the rest")
  void minorityDown() throws Exception {
    try (RedisServers servers = RedisServers.start(5, RedisServer.builder().faultInjection());
        Redlock redlock = redlock(servers)) {
      servers.get(0).kill();
      servers.get(3).kill();
      String resource = resource();
      Optional<Lease> lease = redlock.tryAcquire(resource, TTL);
      assertThat(lease).isPresent();
      assertThat(lease.get().isValid()).isTrue();
      int holding = 0;
      for (int i : new int[] {1, 2, 4}) {
        if (lease.get().token().equals(servers.get(i).command("GET", resource))) {
          holding++;
        }
      }
      assertThat(holding).as("live nodes holding the token").isEqualTo(3);
      assertThat(redlock.tryAcquire(resource, TTL)).as("held: nobody else gets it").isEmpty();
      ReleaseOutcome outcome = lease.get().release();
      assertThat(outcome.deleted()).isEqualTo(3);
      assertThat(outcome.failedNodes()).hasSize(2);
      assertThat(holdersAfterSettling(servers, resource)).isEmpty();
    }
  }

  @Test
  @DisplayName("with 3 of 5 nodes killed, tryAcquire is empty within bounds and leaves no key")
  void majorityDown() throws Exception {
    try (RedisServers servers = RedisServers.start(5, RedisServer.builder().faultInjection());
        Redlock redlock = redlock(servers)) {
      servers.get(0).kill();
      servers.get(2).kill();
      servers.get(4).kill();
      String resource = resource();
      long started = System.nanoTime();
      Optional<Lease> lease = redlock.tryAcquire(resource, TTL);
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
      assertThat(lease).isEmpty();
      // 3 attempts of at most one node timeout each plus pauses; generous for a busy machine
      assertThat(tookMillis).isLessThan(10_000);
      assertThat(servers.get(1).command("DBSIZE")).isEqualTo(":0");
      assertThat(servers.get(3).command("DBSIZE")).isEqualTo(":0");
    }
  }

  @Test
  @DisplayName("late answers from paused nodes do not leave keys behind")
  void lateAnswersDoNotLeak() throws Exception {
    try (RedisServers servers = RedisServers.start(5, RedisServer.builder().faultInjection());
        Redlock redlock =
            Redlock.builder()
                .nodeUris(servers.uris())
                .nodeTimeout(Duration.ofMillis(200))
                .retry(1, Duration.ZERO, Duration.ZERO)
                .build()) {
      // a first lock opens connections to every node, so the next one is written to all of them
      redlock.tryAcquire(resource(), TTL).orElseThrow().release();
      String resource = resource();
      Optional<Lease> lease;
      servers.get(0).pause();
      servers.get(1).pause();
      servers.get(2).pause();
      try {
        lease = redlock.tryAcquire(resource, TTL);
      } finally {
        servers.get(0).resume();
        servers.get(1).resume();
        servers.get(2).resume();
      }
      assertThat(lease).isEmpty();
      // the paused nodes now run the SET they had queued; their late "acquired" must be released
      assertThat(holdersAfterSettling(servers, resource)).isEmpty();
      for (RedisServer server : servers) {
        assertThat(server.command("DBSIZE")).as(server.address()).isEqualTo(":0");
      }
    }
  }
}
