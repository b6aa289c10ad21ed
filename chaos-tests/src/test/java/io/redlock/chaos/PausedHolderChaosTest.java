package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.FencingGuard;
import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.RedlockBuilder;
import io.redlock.StaleFencingTokenException;
import io.redlock.chaos.History.Work;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scenario 2: a holder pauses past its TTL between reading the protected data and writing it back
 * (the pause models a GC pause or SIGSTOP after its last validity check, which no lock can detect).
 * Meanwhile newer holders write. Fencing must refuse the stale holder's write, so no update is
 * lost.
 */
@DisplayName("Scenario 2: a holder paused past its TTL")
class PausedHolderChaosTest {
  private static final String RESOURCE = "paused-holder";

  private static RedlockBuilder fenced(RedisServers nodes) {
    return Redlock.builder()
        .nodeUris(nodes.uris())
        .nodeTimeout(Duration.ofMillis(Budget.NODE_TIMEOUT))
        .fencing(true);
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  @DisplayName(
      "in process: FencingGuard refuses the write of a holder that slept past its TTL while"
          + " newer holders wrote")
  void fencingGuardInProcess() throws Exception {
    try (RedisServers nodes = RedisServers.start(3, Servers.redisNode());
        ChaosRun run = ChaosRun.start("2-paused-holder-guard");
        Redlock holderClient = fenced(nodes).build();
        Redlock contenderClient = fenced(nodes).build();
        EventLog log = new EventLog(run.inProcessEvents("inproc"), "inproc")) {
      FencingGuard guard = new FencingGuard();
      long[] store = {0}; // the protected data: written only through the guard
      Duration ttl = Duration.ofMillis(Budget.PAUSED_HOLDER_TTL);
      run.begin(Budget.HOLDER_PAUSE + Budget.PAUSED_HOLDER_RUN);
      CountDownLatch holderGranted = new CountDownLatch(1);
      List<Throwable> problems = new java.util.concurrent.CopyOnWriteArrayList<>();
      long[] pauseEnd = {0};

      Thread holder =
          new Thread(
              () -> {
                try {
                  Lease lease = holderClient.acquire(RESOURCE, ttl, Duration.ofSeconds(5));
                  logGrant(log, "holder", lease);
                  long read = store[0]; // read under the lease...
                  holderGranted.countDown();
                  run.fault("the holder pauses for " + Budget.HOLDER_PAUSE + " ms");
                  Thread.sleep(Budget.HOLDER_PAUSE); // ...pause past the TTL...
                  pauseEnd[0] = run.note("the holder wakes up and writes with its old token");
                  String outcome;
                  try {
                    guard.runFenced(RESOURCE, lease.fencingToken(), () -> store[0] = read + 1);
                    outcome = "ok"; // ...and write: this would lose the newer holders' updates
                  } catch (StaleFencingTokenException refused) {
                    outcome = "stale";
                  }
                  log.worked("holder", lease.token(), System.nanoTime(), outcome, read + 1);
                  release(log, "holder", lease);
                } catch (Throwable t) {
                  problems.add(t);
                }
              },
              "holder");
      List<Thread> contenders = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        String name = "contender" + i;
        contenders.add(
            new Thread(
                () -> {
                  try {
                    holderGranted.await(10, TimeUnit.SECONDS);
                    for (int n = 0; n < 10_000 && System.nanoTime() - run.untilNanos() < 0; n++) {
                      Lease lease;
                      try {
                        lease = contenderClient.acquire(RESOURCE, ttl, Duration.ofSeconds(3));
                      } catch (io.redlock.LockTimeoutException e) {
                        log.failed(name, RESOURCE, System.nanoTime(), String.valueOf(e.reason()));
                        continue;
                      }
                      logGrant(log, name, lease);
                      long written =
                          guard.runFenced(
                              RESOURCE,
                              lease.fencingToken(),
                              () -> {
                                long v = store[0];
                                Thread.sleep(1);
                                store[0] = v + 1;
                                return v + 1;
                              });
                      log.worked(name, lease.token(), System.nanoTime(), "ok", written);
                      release(log, name, lease);
                    }
                  } catch (Throwable t) {
                    problems.add(t);
                  }
                },
                name));
      }
      holder.start();
      contenders.forEach(Thread::start);
      holder.join(30_000);
      LivenessCheck.Fresh fresh =
          ChaosRun.freshAcquire(fenced(nodes), RESOURCE, Budget.PAUSED_HOLDER_TTL);
      for (Thread t : contenders) {
        t.join(30_000);
      }
      assertThat(problems).isEmpty();

      History h = run.history();
      List<CheckResult> checks =
          List.of(
              MutualExclusionCheck.check(h),
              LostUpdateCheck.check(h, Map.of(RESOURCE, store[0])),
              FencingOrderCheck.check(h),
              LivenessCheck.check(fresh, Optional.empty()),
              run.awaitHygiene(
                  Servers.snapshot(nodes.list(), List.of()),
                  Budget.PAUSED_HOLDER_TTL + Budget.HYGIENE_SLACK));
      run.report(h, checks);
      assertStaleWriteRefused(h, "holder", pauseEnd[0]);
      Servers.assertNoFailure(checks);
    }
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  @DisplayName(
      "across processes: RedisFencedWrites refuses the write of a client JVM frozen (SIGSTOP)"
          + " past its TTL while another JVM's holders wrote")
  void redisFencedWritesAcrossProcesses() throws Exception {
    try (RedisServers nodes = RedisServers.start(3, Servers.redisNode());
        RedisServer data = Servers.counterStore();
        ChaosRun run = ChaosRun.start("2-paused-holder-redis")) {
      ClientOptions common =
          new ClientOptions()
              .nodes(nodes.uris())
              .counter(data.uri())
              .resource(RESOURCE)
              .ttl(Budget.PAUSED_HOLDER_TTL)
              .nodeTimeout(Budget.NODE_TIMEOUT)
              .fencing(true)
              .fencedWrites(true);
      // The holder: one lease, a long pause between reading and writing the counter.
      ClientProcess holder =
          run.client("holder", common.copy().threads(1).maxOps(1).work(Budget.PAUSED_HOLDER_WORK));
      ClientProcess contender =
          run.client("contender", common.copy().threads(2).work(1).maxWait(3_000));
      run.awaitReady();
      run.begin(Budget.HOLDER_PAUSE + Budget.PAUSED_HOLDER_RUN);
      holder.go(run.startNanos(), run.untilNanos());
      assertThat(holder.awaitLine(l -> l.startsWith("G "), 10_000))
          .as("the holder's grant")
          .isNotNull();
      holder.pause();
      long paused = run.fault("SIGSTOP the holder JVM for " + Budget.HOLDER_PAUSE + " ms");
      contender.go(paused, run.untilNanos());
      TimeUnit.NANOSECONDS.sleep(
          paused + TimeUnit.MILLISECONDS.toNanos(Budget.HOLDER_PAUSE) - System.nanoTime());
      holder.resume();
      long resumed = run.note("SIGCONT the holder JVM; it writes with its old token");
      LivenessCheck.Fresh fresh =
          ChaosRun.freshAcquire(fenced(nodes), RESOURCE, Budget.PAUSED_HOLDER_TTL);
      run.awaitClients();

      History h = run.history();
      List<CheckResult> checks =
          List.of(
              MutualExclusionCheck.check(h),
              LostUpdateCheck.check(h, Stores.counters(data.uri())),
              FencingOrderCheck.check(h),
              LivenessCheck.check(fresh, Optional.empty()),
              run.awaitHygiene(
                  Servers.snapshot(nodes.list(), List.of()),
                  Budget.PAUSED_HOLDER_TTL + Budget.HYGIENE_SLACK));
      run.report(h, checks);
      assertStaleWriteRefused(h, "t0", resumed);
      Servers.assertNoFailure(checks);
    }
  }

  /**
   * The paused holder's write was refused, after newer holders had written: without fencing it
   * would have overwritten their increments.
   */
  private static void assertStaleWriteRefused(History h, String holderThread, long wokeUp) {
    Work stale =
        h.works().stream()
            .filter(w -> w.thread().equals(holderThread) && !w.jvm().equals("contender"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("the paused holder logged no write"));
    long newerWrites = h.works().stream().filter(w -> w.ok() && w.nanos() < stale.nanos()).count();
    System.out.printf(
        "CHAOS   the paused holder's write %s; %d newer writes came first and would have been"
            + " lost without fencing%n",
        stale.outcome().equals("stale") ? "was refused" : "WAS ACCEPTED", newerWrites);
    assertThat(stale.nanos()).isGreaterThanOrEqualTo(wokeUp - TimeUnit.MILLISECONDS.toNanos(100));
    assertThat(newerWrites).as("writes by newer holders during the pause").isPositive();
    assertThat(stale.outcome()).as("the paused holder's write").isEqualTo("stale");
  }

  private static void logGrant(EventLog log, String thread, Lease lease) {
    long grant = System.nanoTime();
    Duration remaining = lease.remainingValidity();
    log.granted(
        thread,
        lease.resource(),
        lease.token(),
        lease.fencingToken(),
        grant,
        System.nanoTime() + remaining.toNanos());
  }

  private static void release(EventLog log, String thread, Lease lease) {
    long call = System.nanoTime();
    io.redlock.ReleaseOutcome r = lease.release();
    log.released(
        thread, lease.token(), call, System.nanoTime(), r.answered(), r.deleted(), r.nodes());
  }
}
