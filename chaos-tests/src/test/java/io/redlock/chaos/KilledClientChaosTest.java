package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Redlock;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scenario 6: a client JVM killed ({@code destroyForcibly}, SIGKILL) while one of its threads holds
 * the contended lock. Nobody releases that lease: the lock must become available again once its TTL
 * runs out, and not before.
 */
@DisplayName("Scenario 6: a client JVM killed while holding")
class KilledClientChaosTest {
  private static final String RESOURCE = "orphaned";
  private static final long MS = 1_000_000L;

  @Test
  @Timeout(value = 90, unit = TimeUnit.SECONDS)
  @DisplayName(
      "a JVM killed mid-hold leaves the lock held until its TTL runs out, then the others get it"
          + " at once; no overlap, no lost update, nothing left after the TTL")
  void killedWhileHolding() throws Exception {
    try (RedisServers nodes = RedisServers.start(5, Servers.redisNode());
        RedisServer counter = Servers.counterStore();
        ChaosRun run = ChaosRun.start("6-killed-client")) {
      ClientOptions options =
          new ClientOptions()
              .nodes(nodes.uris())
              .counter(counter.uri())
              .threads(4)
              .resource(RESOURCE)
              .ttl(Budget.KILL_TTL)
              .maxWait(Budget.KILL_TTL)
              .work(1)
              .nodeTimeout(Budget.NODE_TIMEOUT)
              .fencing(true);
      run.client("c1", options);
      run.client("c2", options);
      ClientProcess victim = run.client("c3", options.copy().longHold(Budget.KILL_AFTER, 60_000));
      run.awaitReady();
      run.go(Budget.KILL_AFTER + 1_000 + Budget.KILL_TTL + Budget.KILL_POST);
      String longHold = victim.awaitLine(l -> l.startsWith("L "), Budget.KILL_AFTER + 10_000);
      assertThat(longHold)
          .as("the victim's long hold began; its log:%n%s", victim.logTail())
          .isNotNull();
      victim.kill();
      long killed = run.fault("destroyForcibly client JVM c3 while it holds the lock");
      String token = longHold.split(" ")[3];
      LivenessCheck.Fresh fresh =
          ChaosRun.freshAcquire(
              Redlock.builder()
                  .nodeUris(nodes.uris())
                  .nodeTimeout(Duration.ofMillis(Budget.NODE_TIMEOUT))
                  .fencing(true),
              RESOURCE,
              Budget.KILL_TTL);
      run.awaitClients();

      History h = run.history();
      History.Grant orphan =
          h.grants().stream().filter(g -> g.token().equals(token)).findFirst().orElseThrow();
      assertThat(h.releaseOf(token)).as("the victim never released").isEmpty();
      long next =
          h.grants().stream()
              .filter(g -> g.grantNanos() > killed)
              .mapToLong(History.Grant::grantNanos)
              .min()
              .orElseThrow(() -> new AssertionError("nobody got the lock after the kill"));
      run.note(
          String.format(
              "killed %d ms before the orphaned lease's validity end; next grant %d ms after it",
              (orphan.validEndNanos() - killed) / MS, (next - orphan.validEndNanos()) / MS));

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
                          killed,
                          orphan.validEndNanos(), // the fault lasts until the TTL runs out
                          run.untilNanos()))),
              run.awaitHygiene(
                  Servers.snapshot(nodes.list(), List.of()),
                  Budget.KILL_TTL + Budget.HYGIENE_SLACK));
      run.report(h, checks);
      Servers.assertNoFailure(checks);
      assertThat(next - orphan.validEndNanos())
          .as("the lock is taken again soon after the orphaned lease's TTL ran out")
          .isBetween(0L, 1_000 * MS);
    }
  }
}
