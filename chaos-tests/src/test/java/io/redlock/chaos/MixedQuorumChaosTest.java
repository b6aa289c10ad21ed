package io.redlock.chaos;

import io.redlock.Redlock;
import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scenario 5: the standard mixed quorum, 3 Redis + 2 PostgreSQL, under contention; one PostgreSQL
 * server stops at once (immediate shutdown, as {@code pg_ctl -m immediate}: no checkpoint, clients
 * cut off) and is restarted.
 */
@DisplayName("Scenario 5: mixed quorum of 3 Redis + 2 PostgreSQL, one PostgreSQL crashed")
class MixedQuorumChaosTest {
  private static final String RESOURCE = "mixed";
  private static final long MS = 1_000_000L;

  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  @DisplayName(
      "2 client JVMs x 4 threads contend for one resource and a third locks distinct keys on 3"
          + " Redis + 2 PostgreSQL nodes while one PostgreSQL stops immediately and restarts: one"
          + " holder at a time, no lost update, tokens increase, throughput back, nothing left")
  void postgresCrash() throws Exception {
    try (RedisServers redis = RedisServers.start(3, Servers.redisNode());
        PostgresServer pg1 = PostgresServer.startLocal();
        PostgresServer pg2 = PostgresServer.startLocal();
        RedisServer counter = Servers.counterStore();
        ChaosRun run = ChaosRun.start("5-mixed-pg-crash")) {
      List<String> uris = new ArrayList<>(redis.uris());
      // the default PostgreSQL backend (postgresql://, Vert.x); backend-jdbc's reconnection after
      // a restart has its own test
      uris.add(pg1.uri() + "&redlock.createTable=true");
      uris.add(pg2.uri() + "&redlock.createTable=true");
      ClientOptions options =
          new ClientOptions()
              .nodes(uris)
              .counter(counter.uri())
              .threads(4)
              .resource(RESOURCE)
              .ttl(Budget.MIXED_TTL)
              .maxWait(Budget.MIXED_TTL)
              .work(1)
              .nodeTimeout(Budget.NODE_TIMEOUT)
              .fencing(true)
              .healthEvery(100);
      run.client("c1", options);
      run.client("c2", options);
      // A third JVM locks distinct keys: enough grants per 250 ms for C4 to tell a slow recovery
      // from noise (one contended resource over PostgreSQL gives only tens).
      run.client("c3", options.copy().distinctResources("mixed-load").maxWait(0));
      run.awaitReady();
      run.go(Budget.MIXED_PRE + Budget.MIXED_DOWN + Budget.MIXED_POST);
      run.sleepUntil(Budget.MIXED_PRE);
      pg1.crash();
      long crashed =
          run.fault("PostgreSQL node 1 stopped immediately (SIGQUIT, as pg_ctl -m immediate)");
      // the fresh client is built while the node is down (it connects to it once it is back),
      // so that its start does not take the CPU from the clients' recovery being measured
      Redlock freshClient =
          Redlock.builder()
              .nodeUris(uris)
              .nodeTimeout(Duration.ofMillis(Budget.NODE_TIMEOUT))
              .fencing(true)
              .build();
      run.sleepUntil(Budget.MIXED_PRE + Budget.MIXED_DOWN);
      pg1.restart();
      long restarted = run.note("PostgreSQL node 1 restarted and ready");
      LivenessCheck.Fresh fresh = ChaosRun.freshAcquire(freshClient, RESOURCE, Budget.MIXED_TTL);
      run.awaitClients();

      History h = run.history();
      List<Long> grants = h.grants().stream().map(History.Grant::grantNanos).toList();
      List<CheckResult> checks =
          List.of(
              MutualExclusionCheck.check(h),
              LostUpdateCheck.check(h, Stores.counters(counter.uri())),
              FencingOrderCheck.check(h),
              LivenessCheck.check(
                  fresh,
                  Optional.of(
                      new LivenessCheck.Throughput(
                          grants,
                          run.startNanos() + Budget.WARM_UP * MS,
                          crashed,
                          restarted,
                          run.untilNanos()))),
              run.awaitHygiene(
                  Servers.snapshot(redis.list(), List.of(pg1, pg2)),
                  Budget.MIXED_TTL + Budget.HYGIENE_SLACK));
      run.report(h, checks);
      Servers.assertNoFailure(checks);
    }
  }
}
