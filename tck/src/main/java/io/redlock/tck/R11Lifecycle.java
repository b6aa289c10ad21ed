package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R11 Lifecycle and identity: close, name() and capabilities(). */
interface R11Lifecycle {

  @Test
  @DisplayName("R11.1 close is idempotent")
  default void r11_1_closeIsIdempotent(Harness h) {
    LockNode n = h.newNode();
    h.closeByKit(n);
    h.closeByKit(n);
    h.closeByKit(n);
  }

  @Test
  @DisplayName("R11.2 calls after close throw IllegalStateException naming the node")
  default void r11_2_callsAfterCloseThrow(Harness h) {
    String key = h.key("r11.2");
    String token = token();
    h.assertRefusedAfterClose(
        "R11.2",
        Map.of(
            "tryAcquire", n -> n.tryAcquire(key, token, LONG_TTL),
            "release", n -> n.release(key, token),
            "extend", n -> n.extend(key, token, LONG_TTL)));
  }

  @Test
  @DisplayName("R11.3 closing one node leaves other nodes working and its keys held")
  default void r11_3_closeIsLocal(Harness h) {
    LockNode closing = h.newNode();
    LockNode staying = h.newNode();
    String key = h.key("r11.3");
    String owner = token();
    assertTrue(h.acquire(closing, key, owner, LONG_TTL), "R11.3: tryAcquire of an absent key");
    h.closeByKit(closing);
    assertFalse(
        h.acquire(staying, key, token(), LONG_TTL),
        "R11.3: another node's tryAcquire of a key held by a node that was closed");
    String fresh = h.key("r11.3-fresh");
    String mine = token();
    assertTrue(
        h.acquire(staying, fresh, mine, LONG_TTL),
        "R11.3: another node's tryAcquire of a fresh key after one node was closed");
    assertTrue(h.release(staying, fresh, mine), "R11.3: release of the fresh key");
    assertTrue(
        h.release(staying, key, owner),
        "R11.3: release, through another node, of a key acquired by the closed node");
  }

  @Test
  @DisplayName("R11.4 name() and toString() are non-blank and show no password")
  default void r11_4_nameHidesSecrets(Harness h) {
    LockNode n = h.node();
    assertThat(n.name()).as("R11.4: name()").isNotBlank();
    h.assertNoSecret(n.name(), "R11.4: name()");
    h.assertNoSecret(String.valueOf(n), "R11.4: toString()");
    h.kit()
        .createUnreachableNode()
        .ifPresent(
            down -> {
              h.createdNodes.add(down);
              h.assertNoSecret(down.name(), "R11.4: name() of the unreachable node");
            });
  }

  @Test
  @DisplayName("R11.5 capabilities() is declared and constant")
  default void r11_5_capabilitiesAreConstant(Harness h) {
    LockNode n = h.newNode();
    NodeCapabilities first = n.capabilities();
    assertThat(first).as("R11.5: capabilities()").isNotNull();
    assertThat(n.capabilities()).as("R11.5: capabilities() called again").isEqualTo(first);
    h.closeByKit(n);
    assertThat(n.capabilities()).as("R11.5: capabilities() after close").isEqualTo(first);
  }
}
