package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.RedlockException;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeStatus;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * R13 Status: incarnation, uptime and durability (if declared). Restart quarantine relies on them.
 */
interface R13Status {

  @Test
  @DisplayName("R13.1 status() reports one incarnation and an uptime that grows")
  default void r13_1_statusIsWellFormed(Harness h) {
    h.requireStatus("R13.1");
    long before = System.nanoTime();
    NodeStatus first = h.status(h.node(), "R13.1");
    assertThat(first.incarnation()).as("R13.1: incarnation").isNotBlank();
    first
        .details()
        .forEach(
            (k, v) -> {
              h.assertNoSecret(k, "R13.1: a key of status().details()");
              h.assertNoSecret(v, "R13.1: detail '" + k + "'");
            });
    NodeStatus other = h.status(h.newNode(), "R13.1");
    assertThat(other.incarnation())
        .as("R13.1: incarnation reported by a second node instance on the same store")
        .isEqualTo(first.incarnation());
    // A store that started moments ago may report 0 for up to two seconds: an uptime in whole
    // seconds that is kept below the truth (one taken off a difference of two clock readings).
    Duration wait =
        Duration.ofMillis(first.uptime().compareTo(Duration.ofSeconds(2)) < 0 ? 2500 : 1200);
    sleepUntil(System.nanoTime() + wait.toNanos());
    NodeStatus later = h.status(h.node(), "R13.1");
    long elapsed = System.nanoTime() - before;
    assertThat(later.incarnation())
        .as("R13.1: incarnation %d ms later", wait.toMillis())
        .isEqualTo(first.incarnation());
    // Two uptimes rounded down to whole seconds may differ by up to a second more than the time
    // between them; R13.3 checks that an uptime is never rounded up.
    assertThat(later.uptime())
        .as("R13.1: uptime %d ms after an uptime of %s", wait.toMillis(), first.uptime())
        .isGreaterThanOrEqualTo(first.uptime().plusMillis(200))
        .isLessThan(first.uptime().plusNanos(elapsed).plusSeconds(1));
  }

  @Test
  @DisplayName("R13.2 status() after close throws IllegalStateException naming the node")
  default void r13_2_statusAfterClose(Harness h) {
    h.requireStatus("R13.2");
    h.assertRefusedAfterClose("R13.2", Map.of("status()", LockNode::status));
  }

  @Test
  @DisplayName("R13.3 after a restart, a node open before reports the new incarnation")
  default void r13_3_restartIsReported(Harness h) {
    h.requireStatus("R13.3");
    LockNode n = h.node();
    NodeStatus before = h.status(n, "R13.3");
    String key = h.key("r13.3");
    String owner = token();
    assertTrue(h.acquire(n, key, owner, LONG_TTL), "R13.3: tryAcquire of an absent key");
    long restartedAt = System.nanoTime();
    h.requireRestart("R13.3");
    answerOnce(h, n, "R13.3");
    NodeStatus after = h.status(n, "R13.3");
    assertThat(after.incarnation())
        .as(
            "R13.3: incarnation after the restart, from a node open before it, once it had an"
                + " answer from the restarted store (before: %s)",
            before.incarnation())
        .isNotEqualTo(before.incarnation());
    assertThat(after.uptime())
        .as(
            "R13.3: uptime after the restart, which began %d ms before (an uptime is rounded down,"
                + " never up: restart quarantine counts on it being no longer than the truth)",
            (System.nanoTime() - restartedAt) / 1_000_000)
        .isLessThanOrEqualTo(Duration.ofNanos(System.nanoTime() - restartedAt));
    assertThat(h.status(h.newNode(), "R13.3").incarnation())
        .as("R13.3: incarnation reported by a node opened after the restart")
        .isEqualTo(after.incarnation());
    if (after.durable()) {
      h.assertHeldBy(key, owner, "R13.3 a store that reports durable=true after a restart:");
    }
  }

  /** Makes calls on {@code n} until one is answered (the first after a restart may fail). */
  private void answerOnce(Harness h, LockNode n, String rule) {
    long deadline = System.nanoTime() + h.kit().replyTimeout().toNanos();
    RuntimeException last = null;
    for (int i = 0; i < 50 && System.nanoTime() - deadline < 0; i++) {
      try {
        String probe = token();
        if (h.acquire(n, h.key(rule + "-probe"), probe, LONG_TTL)) {
          return;
        }
      } catch (RedlockException e) {
        last = e; // a connection broken by the restart: the next call opens a new one
      }
      sleepUntil(System.nanoTime() + Duration.ofMillis(100).toNanos());
    }
    throw new AssertionError(
        rule + ": the node open before the restart never had an answer afterwards", last);
  }
}
