package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * R15 Store clock: serverTime() reads the store's clock afresh (if declared). The engine never uses
 * absolute time; diagnostics such as {@code redlock doctor} show each store's clock offset from
 * these reads.
 */
interface R15StoreClock {

  @Test
  @DisplayName("R15.1 serverTime() is close to this machine's clock")
  default void r15_1_serverTimeIsNearLocalTime(Harness h) {
    h.requireClock("R15.1");
    Duration tolerance = h.kit().clockTolerance();
    for (int read = 1; read <= 3; read++) {
      java.time.Instant before = java.time.Instant.now();
      java.time.Instant server = h.serverTime(h.node(), "R15.1");
      java.time.Instant after = java.time.Instant.now();
      assertThat(server)
          .as(
              "R15.1: read %d of serverTime() (this machine's clock read %s before the call and"
                  + " %s after it; the tolerance is %d ms): off by %s; check the unit, the"
                  + " epoch and the time zone",
              read, before, after, tolerance.toMillis(), offsetText(h, server, before, after))
          .isBetween(before.minus(tolerance), after.plus(tolerance));
    }
  }

  @Test
  @DisplayName("R15.2 serverTime() is read afresh on every call")
  default void r15_2_serverTimeIsFresh(Harness h) {
    h.requireClock("R15.2");
    LockNode n = h.node();
    long m0 = System.nanoTime();
    java.time.Instant first = h.serverTime(n, "R15.2");
    long m1 = System.nanoTime();
    // Longer than the steps a coarse clock reads in, which each read may be off by.
    sleepUntil(m1 + max(Duration.ofMillis(1200), h.precision().multipliedBy(3)).toNanos());
    long m2 = System.nanoTime();
    java.time.Instant second = h.serverTime(n, "R15.2");
    long m3 = System.nanoTime();
    // The store read its clock inside each call: first in [m0, m1], second in [m2, m3].
    Duration least = Duration.ofNanos(m2 - m1);
    Duration most = Duration.ofNanos(m3 - m0);
    Duration slack = Duration.ofMillis(20).plus(most.dividedBy(100)).plus(h.precision());
    assertThat(Duration.between(first, second))
        .as(
            "R15.2: time between two serverTime() reads (%s, then %s) that were %d to %d ms"
                + " apart on this machine; near zero means a cached answer: read the store's"
                + " clock afresh on every call",
            first, second, least.toMillis(), most.toMillis())
        .isBetween(least.minus(slack), most.plus(slack));
  }

  @Test
  @DisplayName("R15.3 serverTime() after close throws IllegalStateException naming the node")
  default void r15_3_serverTimeAfterClose(Harness h) {
    h.requireClock("R15.3");
    h.assertRefusedAfterClose("R15.3", Map.of("serverTime()", n -> n.serverTime()));
  }

  @Test
  @DisplayName("R15.4 serverTime() on an unreachable node throws a RedlockException in time")
  default void r15_4_serverTimeOnUnreachableNodeFails(Harness h) {
    h.requireClock("R15.4");
    LockNode down = h.unreachableNode("R15.4");
    Assumptions.assumeTrue(
        down.capabilities().clock(),
        "R15.4 skipped: createUnreachableNode() returned a node that does not declare"
            + " capabilities().clock()");
    h.assertFailsInTime("R15.4", "serverTime", LockNode::serverTime, down);
  }

  private String offsetText(
      Harness h, java.time.Instant server, java.time.Instant before, java.time.Instant after) {
    Duration offset =
        Duration.between(before.plus(Duration.between(before, after).dividedBy(2)), server);
    return offset.toMillis() + " ms";
  }
}
