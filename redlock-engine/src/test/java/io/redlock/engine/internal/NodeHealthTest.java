package io.redlock.engine.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.NodeHealth;
import io.redlock.NodeHealth.State;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("Node health")
class NodeHealthTest {
  private static final Duration TTL = Duration.ofSeconds(10);

  private final ByteArrayOutputStream log = new ByteArrayOutputStream();
  private PrintStream stderr;

  @BeforeEach
  void captureLog() {
    stderr = System.err; // slf4j-simple writes to the System.err of the moment
    System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restoreLog() {
    System.setErr(stderr);
    System.err.print(log.toString(StandardCharsets.UTF_8));
  }

  private long logLines(String text) {
    return log.toString(StandardCharsets.UTF_8).lines().filter(l -> l.contains(text)).count();
  }

  private static NodeHealth of(QuorumRedlock redlock, int node) {
    return redlock.health().get(node);
  }

  private static void cycles(QuorumRedlock redlock, int n) {
    for (int i = 0; i < n; i++) {
      redlock.tryAcquire("health-" + i, TTL).ifPresent(lease -> lease.release());
    }
  }

  @Test
  @DisplayName(
      "is UNKNOWN before any call, then UP with nothing in flight and the last answer's age")
  void unknownThenUp() {
    Cluster cluster = new Cluster(3);
    QuorumRedlock redlock = cluster.redlock();
    assertThat(redlock.health())
        .extracting(NodeHealth::node, NodeHealth::state)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("node-0", State.UNKNOWN),
            org.assertj.core.groups.Tuple.tuple("node-1", State.UNKNOWN),
            org.assertj.core.groups.Tuple.tuple("node-2", State.UNKNOWN));

    cycles(redlock, 1);
    cluster.ticker.advance(Duration.ofMillis(250));

    List<NodeHealth> health = redlock.health();
    assertThat(health).allSatisfy(h -> assertThat(h.state()).isEqualTo(State.UP));
    assertThat(health).allSatisfy(h -> assertThat(h.callsInFlight()).isZero());
    assertThat(health).allSatisfy(h -> assertThat(h.lastError()).isEmpty());
    assertThat(health.get(0).sinceLastAnswer()).contains(Duration.ofMillis(250));
  }

  @Test
  @DisplayName(
      "goes DOWN after 3 failures in a row once the node has been silent for 1 s, logs it once at"
          + " WARN with the cause, and is UP again at its first answer, logged once at INFO")
  void downAndBack() {
    Cluster cluster = new Cluster(3);
    QuorumRedlock redlock =
        cluster.redlock(Cluster.SETTINGS.withRetry(1, Duration.ZERO, Duration.ZERO));
    cycles(redlock, 1);
    cluster.node(0).down();

    cycles(redlock, 3); // 3 acquires and 3 releases fail, but it answered a moment ago
    assertThat(of(redlock, 0).state()).isEqualTo(State.UP);
    assertThat(of(redlock, 0).lastError())
        .hasValueSatisfying(e -> assertThat(e).contains("refused"));

    cluster.ticker.advance(Duration.ofSeconds(1));
    cycles(redlock, 20);
    NodeHealth down = of(redlock, 0);
    assertThat(down.state()).isEqualTo(State.DOWN);
    assertThat(down.lastError()).hasValueSatisfying(e -> assertThat(e).contains("refused"));
    assertThat(down.sinceLastAnswer())
        .hasValueSatisfying(d -> assertThat(d).isGreaterThanOrEqualTo(Duration.ofSeconds(1)));
    assertThat(of(redlock, 1).state()).isEqualTo(State.UP);
    assertThat(logLines("node-0 is down")).isEqualTo(1);
    assertThat(logLines("WARN")).isEqualTo(1);

    cluster.node(0).up();
    cycles(redlock, 5);
    assertThat(of(redlock, 0).state()).isEqualTo(State.UP);
    assertThat(of(redlock, 0).lastError()).isEmpty();
    assertThat(logLines("node-0 is back")).isEqualTo(1);
    assertThat(logLines("INFO")).isEqualTo(1);
  }

  @Test
  @DisplayName(
      "is DOWN after 3 failures when the node never answered, once it has failed for 1 s (its"
          + " first connections may take a moment)")
  void neverAnswered() {
    Cluster cluster = new Cluster(3);
    cluster.node(2).down();
    QuorumRedlock redlock =
        cluster.redlock(Cluster.SETTINGS.withRetry(1, Duration.ZERO, Duration.ZERO));

    cycles(redlock, 1); // acquire and release: 2 failures
    assertThat(of(redlock, 2).state()).isEqualTo(State.UNKNOWN);
    cycles(redlock, 5);
    assertThat(of(redlock, 2).state()).as("failing for less than 1 s").isEqualTo(State.UNKNOWN);
    cluster.ticker.advance(Duration.ofSeconds(1));
    cycles(redlock, 1);
    assertThat(of(redlock, 2).state()).isEqualTo(State.DOWN);
    assertThat(of(redlock, 2).sinceLastAnswer()).isEmpty();
    assertThat(logLines("node-2 is down")).isEqualTo(1);
    assertThat(logLines("never answered")).isEqualTo(1);
  }

  @Test
  @DisplayName(
      "counts abandoned calls in flight until the backend ends them, and a late answer counts as an"
          + " answer")
  void inFlightUntilEnded() {
    Cluster cluster = new Cluster(3);
    QuorumRedlock redlock =
        cluster.redlock(Cluster.SETTINGS.withRetry(1, Duration.ZERO, Duration.ZERO));
    cycles(redlock, 1);
    cluster.node(2).slow();

    cycles(redlock, 2); // 2 acquires and 2 releases time out on node-2 and stay in flight
    assertThat(of(redlock, 2).callsInFlight()).isEqualTo(4);
    assertThat(of(redlock, 0).callsInFlight()).isZero();

    cluster.node(2).deliverLate();
    assertThat(of(redlock, 2).callsInFlight()).isZero();
    assertThat(of(redlock, 2).state()).isEqualTo(State.UP);
    assertThat(of(redlock, 2).lastError()).isEmpty();
  }

  @Test
  @DisplayName("stops counting a call the backend dropped or gave up on")
  void droppedCallsEnd() {
    Cluster cluster = new Cluster(3);
    QuorumRedlock redlock =
        cluster.redlock(Cluster.SETTINGS.withRetry(1, Duration.ZERO, Duration.ZERO));
    cluster.node(1).slow();

    cycles(redlock, 3);
    assertThat(of(redlock, 1).callsInFlight()).isEqualTo(6);
    cluster.ticker.advance(Duration.ofSeconds(1));
    cycles(redlock, 1); // failing for over 1 s now: DOWN, and no longer waited for
    assertThat(of(redlock, 1).callsInFlight()).isEqualTo(8);

    cluster.node(1).dropLate();
    NodeHealth health = of(redlock, 1);
    assertThat(health.callsInFlight()).isZero();
    assertThat(health.state()).isEqualTo(State.DOWN); // never answered, 6 failures
    assertThat(health.lastError()).hasValueSatisfying(e -> assertThat(e).contains("node timeout"));
  }

  @Test
  @DisplayName(
      "once a node is DOWN, fan-outs stop waiting for it, but for one probe every 250 ms; an"
          + " answer brings it back")
  void downNodesCostNoWaiting() {
    Cluster cluster = new Cluster(3);
    QuorumRedlock redlock =
        cluster.redlock(Cluster.SETTINGS.withRetry(1, Duration.ZERO, Duration.ZERO));
    cycles(redlock, 1);
    cluster.node(2).slow(); // no answer: each wait runs out the 50 ms node timeout
    while (of(redlock, 2).state() != State.DOWN) {
      cycles(redlock, 1);
    }
    long before = cluster.ticker.read();
    cycles(redlock, 100);
    assertThat(cluster.ticker.read() - before)
        .as("100 cycles with a node down: at most one probe waited")
        .isLessThanOrEqualTo(Duration.ofMillis(50).toNanos());

    cluster.ticker.advance(Duration.ofMillis(300));
    long probe = cluster.ticker.read();
    cycles(redlock, 2);
    assertThat(cluster.ticker.read() - probe)
        .as("a probe waits in full")
        .isEqualTo(Duration.ofMillis(50).toNanos());

    cluster.node(2).deliverLate(); // it answers again (late)
    assertThat(of(redlock, 2).state()).isEqualTo(State.UP);
    long up = cluster.ticker.read();
    cycles(redlock, 3);
    assertThat(cluster.ticker.read() - up).as("waited for again, and answering at once").isZero();
  }
}
