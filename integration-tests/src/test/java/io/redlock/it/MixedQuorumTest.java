package io.redlock.it;

import static io.redlock.it.ServerChecks.livePostgresRows;
import static io.redlock.it.ServerChecks.settled;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.Redlock;
import io.redlock.testservers.PostgresServer;
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
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The standard mixed demo through the public API only: a quorum of 3 Redis and 2 PostgreSQL nodes,
 * named by URI and opened through the backends' providers; the PostgreSQL nodes over JDBC ({@code
 * jdbc:postgresql://}), then on the reactive backend ({@code postgresql://}).
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
@DisplayName("Redlock on 3 Redis + 2 PostgreSQL nodes")
class MixedQuorumTest {
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final int THREADS = 4;
  private static final int INCREMENTS_PER_THREAD = 10;

  @ParameterizedTest(name = "PostgreSQL on the reactive backend: {0}")
  @ValueSource(booleans = {false, true})
  @DisplayName(
      "contention keeps an exact count, survives a PostgreSQL node stopping, and with 2 Redis"
          + " nodes down no lock can be had and nothing leaks")
  void mixedQuorum(boolean reactive) throws Exception {
    try (RedisServers redis = RedisServers.start(3, RedisServer.builder().faultInjection());
        PostgresServer pg1 = PostgresServer.startLocal();
        PostgresServer pg2 = PostgresServer.startLocal()) {
      List<String> uris = new ArrayList<>(redis.uris());
      for (PostgresServer pg : List.of(pg1, pg2)) {
        uris.add(
            reactive
                ? pg.uri() + "&redlock.createTable=true"
                : pg.jdbcUrl() + "&redlock.createTable=true");
      }
      try (Redlock redlock =
          Redlock.builder()
              .nodeUris(uris)
              // generous for a busy 2-core machine; the default (TTL/50) suits real networks
              .nodeTimeout(Duration.ofMillis(500))
              .retry(3, Duration.ofMillis(5), Duration.ofMillis(30))
              .build()) {
        assertThat(redlock.nodes()).hasSize(5).noneMatch(n -> n.contains(PostgresServer.PASSWORD));
        assertThat(redlock.quorum()).isEqualTo(3);

        // 1. contention on all five nodes; one PostgreSQL node is stopped halfway through
        String resource = "mixed-" + UUID.randomUUID();
        int[] counter = {0}; // deliberately unsynchronised: only the lock protects it
        AtomicInteger done = new AtomicInteger();
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger mostInside = new AtomicInteger();
        Queue<Throwable> problems = new ConcurrentLinkedQueue<>();
        ExecutorService pool = Executors.newFixedThreadPool(THREADS + 1);
        try {
          List<Future<?>> futures = new ArrayList<>();
          for (int t = 0; t < THREADS; t++) {
            futures.add(
                pool.submit(
                    () -> {
                      for (int i = 0; i < INCREMENTS_PER_THREAD; i++) {
                        try (Lease lease = redlock.acquire(resource, TTL, Duration.ofSeconds(90))) {
                          int now = inside.incrementAndGet();
                          mostInside.accumulateAndGet(now, Math::max);
                          int read = counter[0];
                          Thread.sleep(1); // widen the window a lost update needs
                          counter[0] = read + 1;
                          inside.decrementAndGet();
                          done.incrementAndGet();
                        } catch (Exception | AssertionError e) {
                          problems.add(e);
                          return;
                        }
                      }
                    }));
          }
          futures.add(
              pool.submit(
                  () -> {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (done.get() < THREADS * INCREMENTS_PER_THREAD * 2 / 3
                        && System.nanoTime() < deadline) {
                      Thread.sleep(5);
                    }
                    // mid-run: the other four nodes still make a quorum (each call to the stopped
                    // node now costs the node timeout, so this comes late in the run)
                    pg1.stop();
                    return null;
                  }));
          for (Future<?> f : futures) {
            f.get(180, TimeUnit.SECONDS);
          }
        } finally {
          pool.shutdownNow();
        }
        assertThat(problems).isEmpty();
        assertThat(pg1.isRunning()).isFalse();
        assertThat(mostInside.get()).as("threads inside the lock at once").isEqualTo(1);
        synchronized (counter) {
          assertThat(counter[0]).isEqualTo(THREADS * INCREMENTS_PER_THREAD);
        }
        assertThat(livePostgresRows(pg2, resource))
            .as("rows left on the running PostgreSQL")
            .isZero();

        // 2. with PostgreSQL node 1 down, a lock is still had on the other four nodes
        String second = "mixed-" + UUID.randomUUID();
        Optional<Lease> lease = redlock.tryAcquire(second, TTL);
        assertThat(lease).isPresent();
        assertThat(livePostgresRows(pg2, second)).isOne();
        assertThat(lease.get().release().failedNodes()).hasSize(1);
        assertThat(livePostgresRows(pg2, second)).isZero();

        // 3. two Redis nodes down as well: 2 of 5 left, no lock can be had, nothing leaks
        redis.get(0).kill();
        redis.get(1).kill();
        String third = "mixed-" + UUID.randomUUID();
        assertThat(redlock.tryAcquire(third, TTL)).isEmpty();
        assertThatThrownBy(() -> redlock.acquire(third, TTL, Duration.ofSeconds(2)))
            .isInstanceOfSatisfying(
                LockTimeoutException.class,
                e -> {
                  assertThat(e.quorumUnreachable()).isTrue();
                  assertThat(e.unreachableNodes()).hasSize(3);
                  assertThat(e.getMessage()).doesNotContain(PostgresServer.PASSWORD);
                });
        assertThat(settled(() -> redis.get(2).command("GET", third) == null))
            .as("the running Redis node holds no key")
            .isTrue();
        assertThat(settled(() -> livePostgresRows(pg2, third) == 0))
            .as("the running PostgreSQL node holds no row")
            .isTrue();
      }
    }
  }
}
