package io.redlock.it;

import static io.redlock.it.ServerChecks.livePostgresRows;
import static io.redlock.it.ServerChecks.settled;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.Redlock;
import io.redlock.testservers.MongoServer;
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
import org.bson.Document;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Redis, PostgreSQL and MongoDB in one quorum, through the public API only (nodes named by URI and
 * opened through the backends' providers): 2 Redis + 1 PostgreSQL + 2 MongoDB. Contention on a
 * non-atomic counter keeps an exact count with every node up and with one node of each kind stopped
 * in turn; with one of each kind down at once (2 of 5 left) no lock can be had and nothing leaks on
 * the survivors.
 *
 * <p>MongoDB node A is a real MongoDB when one is available ({@value MongoServer#ENVIRONMENT} or
 * Docker), else the stand-in; node B, the one that is stopped, is always the in-process stand-in
 * (shut down and restarted empty, like a crash without persistence). The test prints which.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@DisplayName("Redlock on 2 Redis + 1 PostgreSQL + 2 MongoDB nodes")
class MongoMixedQuorumTest {
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final int THREADS = 3;
  private static final int INCREMENTS_PER_THREAD = 6;
  private static final String DATABASE = "redlock_it_mixed";

  @Test
  @DisplayName(
      "contention keeps an exact count with all nodes up and with one node of each kind stopped"
          + " in turn; with one of each kind down at once no lock can be had and nothing leaks")
  void mixedQuorumWithMongo() throws Exception {
    try (RedisServers redis = RedisServers.start(2, RedisServer.builder().faultInjection());
        PostgresServer pg = PostgresServer.startLocal();
        MongoServer mongoA = MongoServer.start();
        MongoServer mongoB = MongoServer.startStandIn();
        MongoClient mongoARaw = MongoClients.create(mongoA.connectionString())) {
      System.out.println("MongoDB node A: " + mongoA.description());
      System.out.println("MongoDB node B: " + mongoB.description());
      List<String> uris = new ArrayList<>(redis.uris());
      uris.add(pg.jdbcUrl() + "&redlock.createTable=true");
      uris.add(mongoUri(mongoA));
      uris.add(mongoUri(mongoB));
      try (Redlock redlock =
          Redlock.builder()
              .nodeUris(uris)
              // generous for a busy 2-core machine; the default (TTL/50) suits real networks
              .nodeTimeout(Duration.ofMillis(500))
              .retry(3, Duration.ofMillis(5), Duration.ofMillis(30))
              .build()) {
        assertThat(redlock.nodes())
            .hasSize(5)
            .noneMatch(n -> n.contains(PostgresServer.PASSWORD))
            .anyMatch(n -> n.startsWith("mongodb://"));
        assertThat(redlock.quorum()).isEqualTo(3);

        // 1. everything up
        contend(redlock, "all nodes up");

        // 2. one node of each kind stopped in turn, and brought back before the next
        redis.get(0).kill();
        contend(redlock, "Redis node 1 killed");
        redis.get(0).restart();

        pg.stop();
        contend(redlock, "PostgreSQL stopped");
        pg.restart();

        mongoB.stop();
        contend(redlock, "MongoDB node B stopped");
        mongoB.restart();

        // 3. every restarted node serves again (a driver may take a moment to find its server
        // back), then a lock holds on MongoDB node A (read with the server's clock)
        awaitWholeQuorum(redlock);
        String held = "mixed-mongo-" + UUID.randomUUID();
        Optional<Lease> lease = redlock.tryAcquire(held, TTL);
        assertThat(lease).isPresent();
        assertThat(liveMongoDocs(mongoARaw, held)).isOne();
        assertThat(livePostgresRows(pg, held)).isOne();
        assertThat(lease.get().release().complete()).isTrue();
        assertThat(liveMongoDocs(mongoARaw, held)).isZero();
        assertThat(livePostgresRows(pg, held)).isZero();

        // 4. one of each kind down at once: 2 of 5 left, no lock, nothing leaks
        redis.get(0).kill();
        pg.stop();
        mongoB.stop();
        String third = "mixed-mongo-" + UUID.randomUUID();
        assertThat(redlock.tryAcquire(third, TTL)).isEmpty();
        assertThatThrownBy(() -> redlock.acquire(third, TTL, Duration.ofSeconds(2)))
            .isInstanceOfSatisfying(
                LockTimeoutException.class,
                e -> {
                  assertThat(e.quorumUnreachable()).isTrue();
                  assertThat(e.unreachableNodes()).hasSize(3);
                  assertThat(e.getMessage()).doesNotContain(PostgresServer.PASSWORD);
                });
        assertThat(settled(() -> redis.get(1).command("GET", third) == null))
            .as("the running Redis node holds no key")
            .isTrue();
        assertThat(settled(() -> liveMongoDocs(mongoARaw, third) == 0))
            .as("the running MongoDB node holds no document")
            .isTrue();
      }
    }
  }

  /** The server's connection string with the lock database and quick failure while down. */
  private static String mongoUri(MongoServer server) {
    String uri = server.connectionString();
    String options =
        "redlock.database=" + DATABASE + "&serverSelectionTimeoutMS=500&connectTimeoutMS=500";
    if (uri.contains("?")) {
      return uri + "&" + options;
    }
    return uri.substring(uri.indexOf("://") + 3).contains("/")
        ? uri + "?" + options
        : uri + "/?" + options;
  }

  /**
   * {@value #THREADS} threads each take the lock {@value #INCREMENTS_PER_THREAD} times and
   * increment an unsynchronised counter inside it: the count must be exact and never two inside.
   */
  /** Waits (at most 15 s) until a lock is granted and released on all five nodes. */
  private static void awaitWholeQuorum(Redlock redlock) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    Object last = "no lease";
    while (System.nanoTime() - deadline < 0) {
      Optional<Lease> probe = redlock.tryAcquire("mixed-mongo-probe-" + UUID.randomUUID(), TTL);
      if (probe.isPresent()) {
        var outcome = probe.get().release();
        if (outcome.complete() && outcome.deleted() == 5) {
          return;
        }
        last = outcome;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("the restarted nodes did not all serve again within 15 s: " + last);
  }

  private static void contend(Redlock redlock, String situation) throws Exception {
    String resource = "mixed-mongo-" + UUID.randomUUID();
    long start = System.nanoTime();
    int[] counter = {0}; // deliberately unsynchronised: only the lock protects it
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger mostInside = new AtomicInteger();
    Queue<Throwable> problems = new ConcurrentLinkedQueue<>();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        futures.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < INCREMENTS_PER_THREAD; i++) {
                    try (Lease lease = redlock.acquire(resource, TTL, Duration.ofSeconds(90))) {
                      mostInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
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
      for (Future<?> f : futures) {
        f.get(180, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    System.out.printf(
        "contention with %s: %d ms%n", situation, (System.nanoTime() - start) / 1_000_000);
    assertThat(problems).as("failures with %s", situation).isEmpty();
    assertThat(mostInside.get()).as("threads inside the lock at once, %s", situation).isEqualTo(1);
    synchronized (counter) {
      assertThat(counter[0])
          .as("the counter, %s", situation)
          .isEqualTo(THREADS * INCREMENTS_PER_THREAD);
    }
  }

  /** Unexpired lock documents for {@code key}, judged by the server's clock ({@code $$NOW}). */
  private static long liveMongoDocs(MongoClient client, String key) {
    Document live =
        new Document(
            "$expr",
            new Document("$gt", List.of(new Document("$add", List.of("$at", "$ttlMs")), "$$NOW")));
    return client
        .getDatabase(DATABASE)
        .getCollection("locks")
        .countDocuments(new Document("_id", key).append("$and", List.of(live)));
  }
}
