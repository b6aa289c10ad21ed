package io.redlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.cli.internal.Verdict.Finding;
import io.redlock.cli.internal.Verdict.Level;
import io.redlock.cli.internal.Verdict.NodeFacts;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("The doctor's verdict on the timing assumptions")
class VerdictTest {
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration TIMEOUT = Duration.ofMillis(50);
  private static final Duration DRIFT = Duration.ofMillis(102);

  private static NodeFacts up(String name, long worstMillis) {
    return new NodeFacts(name, true, Duration.ofMillis(worstMillis));
  }

  private static NodeFacts down(String name) {
    return new NodeFacts(name, false, Duration.ZERO);
  }

  @Test
  @DisplayName("is OK for three fast nodes and a timeout small against the TTL")
  void healthy() {
    List<Finding> f =
        Verdict.judge(List.of(up("a", 2), up("b", 3), up("c", 4)), TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.OK);
    assertThat(f).anySatisfy(x -> assertThat(x.message()).contains("at least 9.85 s"));
  }

  @Test
  @DisplayName("fails when fewer than a quorum of nodes are reachable")
  void noQuorum() {
    List<Finding> f =
        Verdict.judge(List.of(up("a", 2), down("b"), down("c")), TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.FAIL);
    assertThat(f)
        .anySatisfy(x -> assertThat(x.message()).contains("only 1 of 3 nodes are reachable"));
  }

  @Test
  @DisplayName("warns when one node is down but a quorum remains")
  void oneDown() {
    List<Finding> f =
        Verdict.judge(List.of(up("a", 2), up("b", 2), down("c")), TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.WARN);
    assertThat(f)
        .anySatisfy(x -> assertThat(x.message()).contains("unreachable: c", "0 more failure"));
  }

  @Test
  @DisplayName("fails when a majority answers slower than the per-node timeout")
  void slowMajority() {
    List<Finding> f =
        Verdict.judge(List.of(up("a", 80), up("b", 70), up("c", 3)), TTL, TIMEOUT, DRIFT, false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.FAIL);
    assertThat(f)
        .anySatisfy(x -> assertThat(x.message()).contains("Raise --node-timeout above 160 ms"));
  }

  @Test
  @DisplayName("warns when one node is slow or has little headroom")
  void slowMinority() {
    List<Finding> f =
        Verdict.judge(List.of(up("a", 80), up("b", 30), up("c", 3)), TTL, TIMEOUT, DRIFT, false);

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
        Verdict.judge(
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
    assertThat(Verdict.judge(List.of(up("a", 1), up("b", 1)), TTL, TIMEOUT, DRIFT, false))
        .anySatisfy(x -> assertThat(x.message()).contains("use an odd number"));
    assertThat(Verdict.judge(List.of(up("a", 1)), TTL, TIMEOUT, DRIFT, false))
        .anySatisfy(x -> assertThat(x.message()).contains("single node is not fault tolerant"));
  }

  @Test
  @DisplayName(
      "notes that the zero-setup default only excludes local processes, without lowering the verdict")
  void zeroSetupNote() {
    List<Finding> f =
        Verdict.judge(List.of(up("a", 1), up("b", 1), up("c", 1)), TTL, TIMEOUT, DRIFT, true);

    assertThat(Verdict.overall(f)).isEqualTo(Level.OK);
    assertThat(f).anySatisfy(x -> assertThat(x.level()).isEqualTo(Level.INFO));
  }

  @Test
  @DisplayName("warns about nodes that report they are not durable or restarted within one TTL")
  void durabilityAndUptime() {
    List<Finding> f =
        Verdict.judge(
            List.of(
                new NodeFacts("a", true, Duration.ofMillis(1), false, Duration.ofHours(1)),
                new NodeFacts("b", true, Duration.ofMillis(1), true, Duration.ofSeconds(3)),
                up("c", 1)),
            TTL,
            TIMEOUT,
            DRIFT,
            false);

    assertThat(Verdict.overall(f)).isEqualTo(Level.WARN);
    assertThat(f)
        .anySatisfy(x -> assertThat(x.message()).startsWith("not durable").contains(": a."))
        .anySatisfy(
            x ->
                assertThat(x.message()).contains("restarted less than one TTL ago: b (up 3.00 s)"));
  }
}
