package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R0 Setup: the kit's hooks are usable. */
interface R0Setup {

  @Test
  @DisplayName("R0.1 createNode() returns a new instance on the same store each call")
  default void r0_1_createNodeReturnsNewInstancesOnOneStore(Harness h) {
    LockNode a = h.newNode();
    LockNode b = h.newNode();
    assertThat(a)
        .as("R0.1: createNode() returned the same instance twice; return a new node each call")
        .isNotSameAs(b);
    String key = h.key("r0.1");
    String owner = token();
    assertTrue(h.acquire(a, key, owner, LONG_TTL), "R0.1: first node acquires");
    assertFalse(
        h.acquire(b, key, token(), LONG_TTL),
        "R0.1: a second node from createNode() acquired a key the first one holds:"
            + " the two nodes do not share one store");
    assertTrue(
        h.release(b, key, owner),
        "R0.1: a second node could not release the first node's key with its token");
  }

  @Test
  @DisplayName("R0.2 the timing hooks are positive and capabilities() is declared")
  default void r0_2_hooksAreSane(Harness h) {
    assertThat(h.kit().expiryTolerance()).as("R0.2: expiryTolerance()").isPositive();
    assertThat(h.kit().replyTimeout()).as("R0.2: replyTimeout()").isPositive();
    assertThat(h.kit().failureBound()).as("R0.2: failureBound()").isPositive();
    assertThat(h.kit().keyPrefix()).as("R0.2: keyPrefix()").isNotNull();
    assertThat(h.node().capabilities()).as("R0.2: capabilities()").isNotNull();
  }
}
