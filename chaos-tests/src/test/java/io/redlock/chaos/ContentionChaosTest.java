package io.redlock.chaos;

import io.redlock.Redlock;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Scenario 1: contention on one resource, no fault. */
@DisplayName("Scenario 1: contention on one resource")
class ContentionChaosTest {

  @ParameterizedTest(name = "fencing {0}")
  @ValueSource(booleans = {false, true})
  @Timeout(value = 90, unit = TimeUnit.SECONDS)
  @DisplayName(
      "3 client JVMs x 4 threads contend for one resource on 5 Redis nodes: never two holders,"
          + " no lost update, increasing fencing tokens, nothing left behind")
  void contention(boolean fencing) throws Exception {
    String resource = "contended";
    try (RedisServers nodes = RedisServers.start(5, Servers.redisNode());
        RedisServer counter = Servers.counterStore();
        ChaosRun run = ChaosRun.start("1-contention" + (fencing ? "-fenced" : ""))) {
      ClientOptions options =
          new ClientOptions()
              .nodes(nodes.uris())
              .counter(counter.uri())
              .threads(4)
              .resource(resource)
              .ttl(Budget.CONTENTION_TTL)
              .maxWait(Budget.CONTENTION_TTL)
              .work(1)
              .nodeTimeout(Budget.NODE_TIMEOUT)
              .fencing(fencing);
      String info = nodes.get(0).command("INFO", "server");
      run.note(
          "Redis "
              + info.lines().filter(l -> l.startsWith("redis_version:")).findFirst().orElse("?")
              + ", Java "
              + System.getProperty("java.version")
              + ", "
              + Runtime.getRuntime().availableProcessors()
              + " cores");
      for (int i = 1; i <= 3; i++) {
        run.client("c" + i, options);
      }
      run.awaitReady();
      run.go(Budget.CONTENTION_RUN);

      // Midway, a fresh client joins the contention and must get the lock in time.
      run.sleepUntil(Budget.CONTENTION_RUN / 2);
      run.note("a fresh client asks for the contended resource");
      LivenessCheck.Fresh fresh =
          ChaosRun.freshAcquire(
              Redlock.builder()
                  .nodeUris(nodes.uris())
                  .nodeTimeout(Duration.ofMillis(Budget.NODE_TIMEOUT))
                  .fencing(fencing),
              resource,
              Budget.CONTENTION_TTL);
      run.awaitClients();

      History h = run.history();
      List<CheckResult> checks =
          List.of(
              MutualExclusionCheck.check(h),
              LostUpdateCheck.check(h, Stores.counters(counter.uri())),
              FencingOrderCheck.check(h),
              LivenessCheck.check(fresh, Optional.empty()),
              run.awaitHygiene(
                  Servers.snapshot(nodes.list(), List.of()),
                  Budget.CONTENTION_TTL + Budget.HYGIENE_SLACK));
      run.report(h, checks);
      Servers.assertNoFailure(checks);
    }
  }
}
