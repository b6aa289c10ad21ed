package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.RedlockBuilder;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scenario 4: a Redis node without persistence killed ({@code kill -9}) and restarted empty while a
 * lease is held on it. Built so that the documented risk is likely to show: on nodes A, B, C the
 * holder gets A and B only (C still has another client's stale key, which then goes away); B
 * restarts empty; a contender asks A, B and C. Without restart quarantine B and C can grant it a
 * second majority while the holder still holds; with quarantine B's vote does not count until it
 * has been up for the maximum TTL.
 */
@DisplayName("Scenario 4: a node killed and restarted empty")
class RestartChaosTest {
  private static final String RESOURCE = "restarted";

  private static RedlockBuilder client(RedisServers nodes, boolean quarantine) {
    RedlockBuilder b =
        Redlock.builder()
            .nodeUris(nodes.uris())
            .nodeTimeout(Duration.ofMillis(Budget.NODE_TIMEOUT))
            .retry(5, Duration.ofMillis(20), Duration.ofMillis(50))
            .fencing(true);
    return quarantine ? b.restartQuarantine(Duration.ofMillis(Budget.RESTART_TTL)) : b;
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  @DisplayName(
      "without restart quarantine a contender can be granted the lock the holder still holds"
          + " (C1 is expected to fail: the documented risk)")
  void withoutQuarantine() throws Exception {
    Outcome o = scenario(false, "4-restart-no-quarantine");
    CheckResult c1 = o.checks().get(0);
    if (c1.passed()) {
      // The risk is possible, not certain: the contender may have lost its first attempts to B's
      // broken connections until the holder had released. Say so; do not fail on luck.
      System.out.println(
          "CHAOS   NOTE: the expected overlap did not occur in this run (C1 passed); the risk"
              + " is shown when it does, and QuarantineRedisTest shows it deterministically");
    } else {
      assertThat(c1.detail())
          .as("the overlap is between the holder and the contender")
          .contains("holder/t0");
    }
    // Fencing tokens still increase: B's counter restarts from its clock (a floor in microseconds).
    assertThat(o.checks().get(2).failed()).as("%s", o.checks().get(2)).isFalse();
    assertThat(o.checks().get(4).failed()).as("%s", o.checks().get(4)).isFalse();
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  @DisplayName(
      "with restart quarantine the restarted node's vote does not count: one holder at a time")
  void withQuarantine() throws Exception {
    Outcome o = scenario(true, "4-restart-quarantine");
    Servers.assertNoFailure(o.checks());
    assertThat(o.contenderRefusedWhileHeld())
        .as("the contender was refused while the holder held the lock")
        .isPositive();
  }

  private record Outcome(List<CheckResult> checks, long contenderRefusedWhileHeld) {}

  private static Outcome scenario(boolean quarantine, String name) throws Exception {
    try (RedisServers nodes = RedisServers.start(3, Servers.redisNode());
        RedisServer counter = Servers.counterStore();
        ChaosRun run = ChaosRun.start(name)) {
      ClientOptions common =
          new ClientOptions()
              .nodes(nodes.uris())
              .counter(counter.uri())
              .resource(RESOURCE)
              .ttl(Budget.RESTART_TTL)
              .nodeTimeout(Budget.NODE_TIMEOUT)
              .retry(5, 20, 50)
              .fencing(true)
              .quarantine(quarantine ? Budget.RESTART_TTL : 0);
      // The holder reads the counter, holds for RESTART_HOLD (within its validity), then writes.
      ClientProcess holder =
          run.client(
              "holder",
              common.copy().threads(1).maxOps(1).maxWait(5_000).work(Budget.RESTART_HOLD));
      ClientProcess contender =
          run.client("contender", common.copy().threads(2).maxWait(1_000).work(1));
      if (quarantine) {
        awaitQuarantineOver(client(nodes, true)); // freshly started nodes are young too
      }
      run.awaitReady();
      RedisServer a = nodes.get(0);
      RedisServer b = nodes.get(1);
      RedisServer c = nodes.get(2);
      assertThat(c.command("SET", RESOURCE, "another-client", "PX", "60000")).isEqualTo("+OK");

      run.begin(Budget.RESTART_HOLD + Budget.RESTART_CONTEND + 1_000);
      holder.go(run.startNanos(), run.untilNanos());
      String grant = holder.awaitLine(l -> l.startsWith("G "), 10_000);
      assertThat(grant).as("the holder's grant; its log:%n%s", holder.logTail()).isNotNull();
      String token = grant.split(" ")[4];
      assertThat(a.command("GET", RESOURCE)).as("A holds the holder's key").isEqualTo(token);
      assertThat(b.command("GET", RESOURCE)).as("B holds the holder's key").isEqualTo(token);
      assertThat(c.command("DEL", RESOURCE)).as("C's stale key goes away").isEqualTo(":1");
      b.kill();
      b.restart();
      long restarted = run.fault("kill -9 node B (holding the lease) and restart it empty");
      assertThat(b.command("GET", RESOURCE)).as("B forgot the lease").isNull();
      contender.go(restarted, restarted + TimeUnit.MILLISECONDS.toNanos(Budget.RESTART_CONTEND));
      LivenessCheck.Fresh fresh =
          ChaosRun.freshAcquire(
              client(nodes, quarantine), "fresh-after-restart", Budget.RESTART_TTL);
      run.awaitClients();

      History h = run.history();
      History.Grant held =
          h.grants().stream().filter(g -> g.token().equals(token)).findFirst().orElseThrow();
      long holdEnd =
          h.releaseOf(token)
              .map(r -> Math.min(r.callNanos(), held.validEndNanos()))
              .orElse(held.validEndNanos());
      long refusedWhileHeld =
          h.failures().stream()
              .filter(
                  f -> f.jvm().equals("contender") && f.nanos() > restarted && f.nanos() < holdEnd)
              .count();
      long grantedWhileHeld =
          h.grants().stream()
              .filter(g -> g.jvm().equals("contender") && g.grantNanos() < holdEnd)
              .count();
      run.note(
          "while the holder held: the contender was refused "
              + refusedWhileHeld
              + " times and granted "
              + grantedWhileHeld
              + " times");
      List<CheckResult> checks =
          List.of(
              MutualExclusionCheck.check(h),
              LostUpdateCheck.check(h, Stores.counters(counter.uri())),
              FencingOrderCheck.check(h),
              LivenessCheck.check(fresh, Optional.empty()),
              run.awaitHygiene(
                  Servers.snapshot(nodes.list(), List.of()),
                  Budget.RESTART_TTL + Budget.HYGIENE_SLACK));
      Map<String, String> labels = new LinkedHashMap<>();
      if (!quarantine) {
        labels.put("C1", checks.get(0).failed() ? "FAIL (expected)" : "PASS (no overlap this run)");
        if (checks.get(1).failed()) {
          labels.put("C2", "FAIL (follows C1)");
        }
      }
      run.report(h, checks, labels);
      return new Outcome(checks, refusedWhileHeld);
    }
  }

  /** Polls until every node has been up long enough to vote under quarantine; at most 15 s. */
  private static void awaitQuarantineOver(RedlockBuilder builder) throws InterruptedException {
    try (Redlock redlock = builder.build()) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      while (System.nanoTime() - deadline < 0) {
        Optional<Lease> probe =
            redlock.tryAcquire("quarantine-probe", Duration.ofMillis(Budget.RESTART_TTL));
        if (probe.isPresent() && probe.get().quarantinedNodes().isEmpty()) {
          probe.get().release();
          return;
        }
        probe.ifPresent(Lease::release);
        Thread.sleep(100);
      }
      throw new AssertionError("the nodes never left restart quarantine");
    }
  }
}
