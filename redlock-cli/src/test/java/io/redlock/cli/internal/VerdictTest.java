package io.redlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.cli.internal.DoctorReport.NodeReport;
import io.redlock.cli.internal.Verdict.Finding;
import io.redlock.cli.internal.Verdict.Level;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("The doctor's verdict on the timing assumptions")
class VerdictTest {
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration TIMEOUT = Duration.ofMillis(50);
  private static final Duration DRIFT = Duration.ofMillis(102);

  private static List<Finding> judge(
      List<NodeReport> nodes, Duration ttl, Duration timeout, Duration drift, boolean local) {
    return judge(nodes, ttl, timeout, drift, local, null);
  }

  private static List<Finding> judge(
      List<NodeReport> nodes,
      Duration ttl,
      Duration timeout,
      Duration drift,
      boolean local,
      Restarts.Quarantine q) {
    return Verdict.judge(nodes, ttl, timeout, drift, local, q, Set.of());
  }

  private static NodeReport facts(
      String name,
      boolean reachable,
      Duration worstRtt,
      Boolean durable,
      Duration uptime,
      Boolean reportsStatus,
      Boolean fencing,
      String durability) {
    return node(
        name,
        reachable,
        worstRtt,
        durable,
        uptime,
        reportsStatus,
        fencing,
        durability,
        null,
        null,
        null,
        false);
  }

  private static NodeReport node(
      String name,
      boolean reachable,
      Duration worstRtt,
      Boolean durable,
      Duration uptime,
      Boolean reportsStatus,
      Boolean fencing,
      String durability,
      Boolean readsClock,
      Duration offset,
      Duration uncertainty,
      boolean local) {
    return new NodeReport(
        name,
        "test",
        reachable,
        null,
        null,
        null,
        0,
        null,
        Durations.millis(worstRtt),
        null,
        fencing,
        List.of(),
        reportsStatus,
        null,
        null,
        uptime == null ? null : uptime.toMillis() / 1000.0,
        durable,
        durability == null ? null : Map.of("durability", durability),
        null,
        null,
        null,
        readsClock,
        offset == null ? null : Durations.millis(offset),
        uncertainty == null ? null : Durations.millis(uncertainty),
        null,
        local ? "this machine's own clock" : null);
  }

  private static NodeReport up(String name, long worstMillis) {
    return facts(name, true, Duration.ofMillis(worstMillis), null, null, null, null, null);
  }

  private static NodeReport down(String name) {
    return facts(name, false, Duration.ZERO, null, null, null, null, null);
  }

  @Test
  @DisplayName("is OK for three fast nodes and a timeout small against the TTL")
  void healthy() {
    List<Finding> f =
        judge(List.of(up("a", 2), up("b", 3), up("c", 4)), TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.OK);
    assertThat(f).anySatisfy(x -> assertThat(x.message()).contains("at least 9.85 s"));
  }

  @Test
  @DisplayName("fails when fewer than a quorum of nodes are reachable")
  void noQuorum() {
    List<Finding> f = judge(List.of(up("a", 2), down("b"), down("c")), TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.FAIL);
    assertThat(f)
        .anySatisfy(x -> assertThat(x.message()).contains("only 1 of 3 nodes are reachable"));
  }

  @Test
  @DisplayName("warns when one node is down but a quorum remains")
  void oneDown() {
    List<Finding> f = judge(List.of(up("a", 2), up("b", 2), down("c")), TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.WARN);
    assertThat(f)
        .anySatisfy(x -> assertThat(x.message()).contains("unreachable: c", "0 more failure"));
  }

  @Test
  @DisplayName("fails when a majority answers slower than the per-node timeout")
  void slowMajority() {
    List<Finding> f =
        judge(List.of(up("a", 80), up("b", 70), up("c", 3)), TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.FAIL);
    assertThat(f)
        .anySatisfy(x -> assertThat(x.message()).contains("Raise --node-timeout above 160 ms"));
  }

  @Test
  @DisplayName("warns when one node is slow or has little headroom")
  void slowMinority() {
    List<Finding> f =
        judge(List.of(up("a", 80), up("b", 30), up("c", 3)), TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.WARN);
    assertThat(f)
        .anySatisfy(
            x ->
                assertThat(x.message())
                    .contains("slower than the per-node timeout", "a (worst 80.0 ms)"))
        .anySatisfy(x -> assertThat(x.message()).contains("little headroom", "b (worst 30.0 ms)"));
  }

  @Test
  @DisplayName("fails when the node timeout and drift eat the whole TTL")
  void timeoutEatsTtl() {
    List<Finding> f =
        judge(
            List.of(up("a", 1), up("b", 1), up("c", 1)),
            Duration.ofMillis(100),
            Duration.ofMillis(90),
            Duration.ofMillis(11),
            false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.FAIL);
    assertThat(f)
        .anySatisfy(x -> assertThat(x.message()).contains("could be granted with no validity"));
  }

  @Test
  @DisplayName("warns about an even number of nodes and about a single node")
  void nodeCounts() {
    assertThat(judge(List.of(up("a", 1), up("b", 1)), TTL, TIMEOUT, DRIFT, false))
        .anySatisfy(x -> assertThat(x.message()).contains("use an odd number"));
    assertThat(judge(List.of(up("a", 1)), TTL, TIMEOUT, DRIFT, false))
        .anySatisfy(x -> assertThat(x.message()).contains("single node is not fault tolerant"));
  }

  @Test
  @DisplayName(
      "notes that the zero-setup default only excludes local processes, without lowering the verdict")
  void zeroSetupNote() {
    List<Finding> f = judge(List.of(up("a", 1), up("b", 1), up("c", 1)), TTL, TIMEOUT, DRIFT, true);

    assertThat(Verdict.overall(f)).isEqualTo(Level.OK);
    assertThat(f).anySatisfy(x -> assertThat(x.level()).isEqualTo(Level.INFO));
  }

  private static NodeReport status(String name, boolean durable, Duration uptime) {
    return facts(
        name,
        true,
        Duration.ofMillis(1),
        durable,
        uptime,
        true,
        true,
        durable ? "durable" : "not durable: appendfsync everysec");
  }

  private static final Restarts.Quarantine ONE_MINUTE =
      new Restarts.Quarantine(Duration.ofMinutes(1), Duration.ofMillis(60_602));

  @Test
  @DisplayName(
      "warns about nodes that are not durable, explains restart quarantine, and flags young ones")
  void durabilityAndUptime() {
    List<Finding> f =
        judge(
            List.of(
                status("a", false, Duration.ofHours(1)),
                status("b", true, Duration.ofSeconds(3)),
                status("c", false, Duration.ofSeconds(4))),
            TTL,
            TIMEOUT,
            DRIFT,
            false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.WARN);
    assertThat(f)
        .anySatisfy(
            x ->
                assertThat(x.message())
                    .startsWith("not durable: a (appendfsync everysec), c (appendfsync everysec).")
                    .contains("--quarantine MAXTTL", "restartQuarantine(maxTtl)", "no lock can be"))
        .anySatisfy(
            x ->
                assertThat(x.message())
                    .startsWith("started or restarted less than one TTL ago")
                    .contains(": c (up 4.00 s)")
                    .doesNotContain("b (up"));
  }

  @Test
  @DisplayName("does not warn about a durable node that started a moment ago")
  void youngDurableNodeIsFine() {
    List<Finding> f =
        judge(
            List.of(
                status("a", true, Duration.ofMillis(2)),
                status("b", true, Duration.ofMillis(1)),
                status("c", true, Duration.ofMillis(3))),
            TTL,
            TIMEOUT,
            DRIFT,
            false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.OK);
    assertThat(f).noneMatch(x -> x.topic() == Verdict.Topic.DURABILITY);
  }

  @Test
  @DisplayName("with quarantine, fails when too few nodes may vote yet, and says when they will")
  void quarantineBlocksQuorum() {
    List<NodeReport> nodes =
        List.of(
            status("a", false, Duration.ofSeconds(10)),
            status("b", false, Duration.ofSeconds(20)),
            status("c", false, Duration.ofSeconds(30)));

    List<Finding> f = judge(nodes, TTL, TIMEOUT, DRIFT, false, ONE_MINUTE);

    assertThat(Verdict.overall(f)).isEqualTo(Level.FAIL);
    assertThat(f)
        .filteredOn(x -> x.level() == Level.FAIL)
        .singleElement()
        .satisfies(
            x -> {
              assertThat(x.topic()).isEqualTo(Verdict.Topic.QUARANTINE);
              // two of three must come out: b after 40.60 s
              assertThat(x.message())
                  .contains("only 0 of 3 nodes may vote now", "in 40.60 s at the earliest");
            });
    assertThat(DoctorCommand.exitCode(f)).isEqualTo(69);
    assertThat(Restarts.quarantine(nodes.get(2), ONE_MINUTE))
        .isEqualTo(
            new Restarts.QuarantineView(
                io.redlock.NodeReport.Quarantine.ACTIVE, Duration.ofMillis(30_602)));
  }

  @Test
  @DisplayName("with quarantine, warns about a quarantined minority and lets durable nodes vote")
  void quarantineMinority() {
    List<NodeReport> nodes =
        List.of(
            status("a", true, Duration.ofSeconds(1)),
            status("b", true, Duration.ofSeconds(1)),
            status("c", false, Duration.ofSeconds(1)));

    List<Finding> f = judge(nodes, TTL, TIMEOUT, DRIFT, false, ONE_MINUTE);

    assertThat(Verdict.overall(f)).isEqualTo(Level.WARN);
    assertThat(f)
        .anySatisfy(
            x ->
                assertThat(x.message())
                    .startsWith("in restart quarantine")
                    .contains("c (up 1.00 s)", "the 2 other nodes"));
    assertThat(DoctorCommand.exitCode(f)).isZero();
    assertThat(Restarts.quarantine(nodes.get(0), ONE_MINUTE).state())
        .isEqualTo(io.redlock.NodeReport.Quarantine.NOT_NEEDED);
    assertThat(Restarts.quarantine(nodes.get(2), null).state())
        .isEqualTo(io.redlock.NodeReport.Quarantine.OFF);
  }

  @Test
  @DisplayName("with quarantine, is OK once every node that is not durable has been up long enough")
  void quarantinePassed() {
    List<NodeReport> nodes =
        List.of(
            status("a", false, Duration.ofMinutes(2)),
            status("b", false, Duration.ofMillis(60_602)),
            status("c", true, Duration.ofSeconds(1)));

    List<Finding> f = judge(nodes, TTL, TIMEOUT, DRIFT, false, ONE_MINUTE);

    assertThat(Verdict.overall(f)).isEqualTo(Level.OK);
    assertThat(Restarts.quarantine(nodes.get(1), ONE_MINUTE).state())
        .isEqualTo(io.redlock.NodeReport.Quarantine.PASSED);
    assertThat(f).anySatisfy(x -> assertThat(x.message()).contains("all votes count"));
  }

  @Test
  @DisplayName("with quarantine, fails with 64 for a node that reports no status")
  void quarantineUnsupported() {
    NodeReport blind = facts("x", true, Duration.ofMillis(1), null, null, false, false, null);
    List<NodeReport> nodes =
        List.of(status("a", true, Duration.ofSeconds(1)), status("b", true, Duration.ZERO), blind);

    List<Finding> withQuarantine = judge(nodes, TTL, TIMEOUT, DRIFT, false, ONE_MINUTE);
    List<Finding> without = judge(nodes, TTL, TIMEOUT, DRIFT, false, null);

    assertThat(Verdict.overall(withQuarantine)).isEqualTo(Level.FAIL);
    assertThat(withQuarantine)
        .anySatisfy(x -> assertThat(x.message()).contains("report its status", ": x;"));
    assertThat(DoctorCommand.exitCode(withQuarantine)).isEqualTo(64);
    assertThat(Restarts.quarantine(blind, ONE_MINUTE).state())
        .isEqualTo(io.redlock.NodeReport.Quarantine.UNSUPPORTED);
    assertThat(Verdict.overall(without)).isEqualTo(Level.OK);
    assertThat(without)
        .anySatisfy(
            x ->
                assertThat(x.message())
                    .startsWith("durability and restarts unknown")
                    .contains(": x;"))
        .anySatisfy(x -> assertThat(x.message()).startsWith("no fencing counters on x"));
    assertThat(Restarts.quarantine(blind, null).state())
        .isEqualTo(io.redlock.NodeReport.Quarantine.NOT_APPLICABLE);
  }

  private static NodeReport clock(String name, long offsetMillis, long uncertaintyMillis) {
    return clock(
        name, true, Duration.ofMillis(offsetMillis), Duration.ofMillis(uncertaintyMillis), false);
  }

  private static NodeReport clock(
      String name, Boolean readsClock, Duration offset, Duration uncertainty, boolean local) {
    return node(
        name,
        true,
        Duration.ofMillis(1),
        null,
        null,
        null,
        null,
        null,
        readsClock,
        offset,
        uncertainty,
        local);
  }

  @Test
  @DisplayName(
      "warns about a store clock 30 s ahead, naming the node, the figure and the fix, and exits 0")
  void clockFarOff() {
    List<NodeReport> nodes =
        List.of(clock("redis://a", 30_020, 1), clock("redis://b", 2, 1), clock("redis://c", -3, 1));

    List<Finding> f = judge(nodes, TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.WARN);
    assertThat(f)
        .filteredOn(x -> x.topic() == Verdict.Topic.CLOCK)
        .singleElement()
        .satisfies(
            x -> {
              assertThat(x.level()).isEqualTo(Level.WARN);
              assertThat(x.message())
                  .contains("redis://a (store 30.02 s ahead ± 1.0 ms)")
                  .contains("only clock rates", "Enable NTP", "slew")
                  .doesNotContain("redis://b", "redis://c", "this machine's clock may be");
            });
    assertThat(DoctorCommand.exitCode(f)).as("a warning does not fail the doctor").isZero();
  }

  @Test
  @DisplayName("is OK with store clocks within a second, and names the largest offset")
  void clocksInStep() {
    List<NodeReport> nodes = List.of(clock("a", 900, 1), clock("b", -2, 1), clock("c", 5, 1));

    List<Finding> f = judge(nodes, TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.OK);
    assertThat(f)
        .anySatisfy(
            x ->
                assertThat(x.message())
                    .startsWith("store clocks are within 1.00 s")
                    .contains("a (store 900 ms ahead"));
  }

  @Test
  @DisplayName("does not warn about an offset above a second that its uncertainty could explain")
  void clockOffsetWithinUncertainty() {
    List<NodeReport> nodes =
        List.of(clock("slow", -1_300, 400), clock("b", 1, 1), clock("c", 1, 1));

    List<Finding> f = judge(nodes, TTL, TIMEOUT, DRIFT, false);

    assertThat(f).noneSatisfy(x -> assertThat(x.level()).isEqualTo(Level.WARN));
  }

  @Test
  @DisplayName(
      "suspects this machine's clock when every store is off the same way, and ignores stores on"
          + " this machine's own clock")
  void everyStoreOff() {
    NodeReport local =
        clock("jdbc:sqlite:/x.db", true, Duration.ofMillis(50_000), Duration.ofMillis(1), true);
    List<NodeReport> nodes = List.of(clock("a", -40_000, 1), clock("b", -40_003, 1), local);

    List<Finding> f = judge(nodes, TTL, TIMEOUT, DRIFT, false);

    assertThat(f)
        .anySatisfy(
            x ->
                assertThat(x.message())
                    .contains("a (store 40.00 s behind", "b (store 40.00 s behind")
                    .contains("this machine's clock may be the one that is off")
                    .doesNotContain("sqlite"));
  }

  @Test
  @DisplayName("notes nodes whose backend does not read the store's clock, without a warning")
  void clockUnknown() {
    NodeReport blind = clock("x", false, null, null, false);
    List<NodeReport> nodes = List.of(clock("a", 1, 1), clock("b", 1, 1), blind);

    List<Finding> f = judge(nodes, TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.OK);
    assertThat(f)
        .anySatisfy(
            x -> {
              assertThat(x.level()).isEqualTo(Level.INFO);
              assertThat(x.message())
                  .isEqualTo(
                      "clock offset unknown (the backend does not read the store's clock): x");
            });
  }

  @Test
  @DisplayName(
      "fails, as exec does, when nodes report the same incarnation: one server listed twice, whose"
          + " votes fail together")
  void sameServer() {
    java.util.Map<String, String> incarnations = new java.util.LinkedHashMap<>();
    incarnations.put("redis://127.0.0.1:7000/0", "run-a");
    incarnations.put("redis://localhost:7000/1", "run-a");
    incarnations.put("redis://127.0.0.1:7001", "run-b");

    Verdict.Finding f = Verdict.sameServer(incarnations).orElseThrow();

    assertThat(f.level()).isEqualTo(Verdict.Level.FAIL);
    assertThat(f.topic()).isEqualTo(Verdict.Topic.SAME_SERVER);
    assertThat(f.message())
        .contains("redis://127.0.0.1:7000/0 and redis://localhost:7000/1")
        .contains("these 3 nodes are only 2 independent servers");
    incarnations.put("redis://localhost:7000/1", "run-c");
    assertThat(Verdict.sameServer(incarnations)).isEmpty();
  }
}
