package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.FencingGuard;
import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.redis.RedisLockNode;
import io.redlock.spi.LockNode;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fencing tokens on five real Redis servers: they strictly increase across acquisitions of a
 * resource whatever majorities granted them, which taking the maximum of the nodes' counters alone
 * would not achieve.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@DisplayName("Fencing tokens on five real Redis nodes")
class FencingRedisTest {
  private static final Duration TTL = Duration.ofSeconds(5);

  /** Nodes as objects, so that a test can read a node's fence key. */
  private static List<RedisLockNode> nodes(RedisServers servers) {
    return servers.list().stream().map(s -> RedisLockNode.fromUri(s.uri())).toList();
  }

  private static Redlock fencedRedlock(List<? extends LockNode> nodes) {
    return Redlock.builder()
        .nodes(nodes)
        .fencing(true)
        // generous for a busy 2-core machine; the default (TTL/50) is for production networks
        .nodeTimeout(Duration.ofMillis(300))
        .retry(3, Duration.ofMillis(5), Duration.ofMillis(30))
        .build();
  }

  private static String resource() {
    return "fenced-" + UUID.randomUUID();
  }

  @Test
  @DisplayName("A's counter far ahead, {A,B,C} then {C,D,E}: the second token is still higher")
  void abcThenCde() throws Exception {
    try (RedisServers servers = RedisServers.start(5, RedisServer.builder().faultInjection())) {
      List<RedisLockNode> nodes = nodes(servers);
      try (Redlock redlock = fencedRedlock(nodes)) {
        String resource = resource();
        // A's counter far ahead of the others, as a long history on A alone would leave it.
        long seeded = System.currentTimeMillis() * 1000 + 1_000_000_000_000L; // 11 days ahead
        assertThat(
                servers
                    .get(0)
                    .command("SET", nodes.get(0).fenceKey(resource), Long.toString(seeded)))
            .isEqualTo("+OK");

        long first;
        pause(servers, 3, 4); // D and E unavailable: {A, B, C} grant
        try {
          Lease lease = redlock.tryAcquire(resource, TTL).orElseThrow();
          first = lease.fencingToken();
          lease.release();
        } finally {
          resume(servers, 3, 4);
        }
        assertThat(first).isGreaterThan(seeded);
        // The write-back put the maximum on B and C; D never saw it.
        assertThat(counter(servers.get(2), nodes.get(2), resource)).isGreaterThanOrEqualTo(first);
        assertThat(counter(servers.get(3), nodes.get(3), resource))
            .as("D's own counter: the naive maximum over {C, D, E} would fall back to it")
            .isLessThan(first);

        long second;
        pause(servers, 0, 1); // A and B unavailable: {C, D, E} grant
        try {
          Lease lease = redlock.tryAcquire(resource, TTL).orElseThrow();
          second = lease.fencingToken();
          lease.release();
        } finally {
          resume(servers, 0, 1);
        }
        assertThat(second).isGreaterThan(first);
      }
    }
  }

  @Test
  @DisplayName("many clients and random majorities: a later acquisition always has a higher token")
  void randomMajorities() throws Exception {
    int clients = 4;
    int acquisitionsPerClient = 25;
    try (RedisServers servers = RedisServers.start(5, RedisServer.builder().faultInjection())) {
      List<Redlock> redlocks = new ArrayList<>();
      try {
        for (int c = 0; c < clients; c++) {
          redlocks.add(fencedRedlock(nodes(servers)));
        }
        String resource = resource();
        Queue<Grant> history = new ConcurrentLinkedQueue<>();
        Queue<Throwable> problems = new ConcurrentLinkedQueue<>();
        FencingGuard guard = new FencingGuard();
        AtomicBoolean done = new AtomicBoolean();
        AtomicInteger pausedNow = new AtomicInteger();
        CountDownLatch chaosStarted = new CountDownLatch(1);
        AtomicInteger grantedWithNodesPaused = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(clients + 1);
        try {
          Future<?> chaos =
              pool.submit(
                  () -> pauseRandomMinorities(servers, done, pausedNow, chaosStarted, problems));
          List<Future<?>> workers = new ArrayList<>();
          for (Redlock redlock : redlocks) {
            workers.add(
                pool.submit(
                    () -> {
                      try {
                        chaosStarted.await(10, TimeUnit.SECONDS);
                      } catch (InterruptedException e) {
                        return;
                      }
                      for (int i = 0; i < acquisitionsPerClient; i++) {
                        long began = System.nanoTime();
                        try (Lease lease = redlock.acquire(resource, TTL, Duration.ofSeconds(30))) {
                          long granted = System.nanoTime();
                          if (pausedNow.get() > 0) {
                            grantedWithNodesPaused.incrementAndGet();
                          }
                          Thread.sleep(15); // hold it a moment, so that the run sees many pauses
                          history.add(new Grant(lease.fencingToken(), began, granted));
                          // the protected resource's side: never a token below one it accepted
                          if (!guard.tryAccept(resource, lease.fencingToken()) && lease.isValid()) {
                            problems.add(
                                new AssertionError(
                                    "the token of a valid lease was refused as stale: "
                                        + lease.fencingToken()));
                          }
                        } catch (Exception | AssertionError e) {
                          problems.add(e);
                          return;
                        }
                      }
                    }));
          }
          for (Future<?> worker : workers) {
            worker.get(150, TimeUnit.SECONDS);
          }
          done.set(true);
          chaos.get(10, TimeUnit.SECONDS);
        } finally {
          done.set(true);
          pool.shutdownNow();
          for (RedisServer server : servers) {
            server.resume();
          }
        }
        assertThat(problems).isEmpty();
        assertThat(history).hasSize(clients * acquisitionsPerClient);
        assertThat(grantedWithNodesPaused.get())
            .as("acquisitions granted while a minority was paused (random majorities)")
            .isPositive();
        assertIncreasing(new ArrayList<>(history));
      } finally {
        redlocks.forEach(Redlock::close);
      }
    }
  }

  /** One granted acquisition: its token, when it began and when it was granted (nanoTime). */
  private record Grant(long token, long began, long granted) {}

  /**
   * For every pair X, Y with Y begun after X was granted: token(Y) > token(X). Checked with the
   * grants sorted by grant time and a running maximum, against every acquisition's start.
   */
  private static void assertIncreasing(List<Grant> history) {
    List<Grant> byGrant = new ArrayList<>(history);
    byGrant.sort(Comparator.comparingLong(Grant::granted));
    long[] grantedAt = byGrant.stream().mapToLong(Grant::granted).toArray();
    long[] maxTokenUpTo = new long[byGrant.size()];
    long max = 0;
    for (int i = 0; i < byGrant.size(); i++) {
      max = Math.max(max, byGrant.get(i).token());
      maxTokenUpTo[i] = max;
    }
    int checkedPairs = 0;
    for (Grant y : history) {
      // grants strictly before y began
      int idx = Arrays.binarySearch(grantedAt, y.began());
      int before = idx >= 0 ? idx : -idx - 1;
      while (before > 0 && grantedAt[before - 1] >= y.began()) {
        before--;
      }
      if (before > 0) {
        checkedPairs += before;
        assertThat(y.token())
            .as(
                "token of an acquisition begun after grants up to token %d",
                maxTokenUpTo[before - 1])
            .isGreaterThan(maxTokenUpTo[before - 1]);
      }
    }
    assertThat(checkedPairs).as("ordered pairs checked").isPositive();
  }

  /** Pauses a random minority (1 or 2 of 5) for a moment, again and again, until done. */
  private static void pauseRandomMinorities(
      RedisServers servers,
      AtomicBoolean done,
      AtomicInteger pausedNow,
      CountDownLatch started,
      Queue<Throwable> problems) {
    Random random = new Random(11);
    try {
      for (int round = 0; round < 500 && !done.get(); round++) {
        int[] paused = random.ints(0, 5).distinct().limit(1 + random.nextInt(2)).toArray();
        pause(servers, paused);
        pausedNow.set(paused.length);
        started.countDown();
        try {
          Thread.sleep(150 + random.nextInt(200));
        } finally {
          pausedNow.set(0);
          resume(servers, paused);
        }
        Thread.sleep(50 + random.nextInt(100));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      problems.add(e);
    } finally {
      started.countDown();
    }
  }

  private static void pause(RedisServers servers, int... indexes) {
    for (int i : indexes) {
      servers.get(i).pause();
    }
  }

  private static void resume(RedisServers servers, int... indexes) {
    for (int i : indexes) {
      servers.get(i).resume();
    }
  }

  private static long counter(RedisServer server, RedisLockNode node, String resource) {
    String value = server.command("GET", node.fenceKey(resource));
    return value == null ? 0 : Long.parseLong(value);
  }
}
