package io.redlock.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.RedlockNonTransientException;
import io.redlock.spi.testproviders.MapLockNode;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("NodeCapabilities: optional parts are declared, and old constructors keep working")
class NodeCapabilitiesTest {
  private static final Duration MS = Duration.ofMillis(1);

  @Test
  @DisplayName("every constructor from before the clock capability declares no clock")
  void compatConstructorsDeclareNoClock() {
    assertThat(new NodeCapabilities(MS).clock()).isFalse();
    assertThat(new NodeCapabilities(MS, true, true).clock()).isFalse();
    NodeCapabilities fourComponents = new NodeCapabilities(MS, true, true, true);
    assertThat(fourComponents.clock()).isFalse();
    assertThat(fourComponents).isEqualTo(new NodeCapabilities(MS, true, true, true, false));
    assertThat(NodeCapabilities.millisecondPrecision().clock()).isFalse();
  }

  @Test
  @DisplayName("withClock() declares the clock and keeps every other feature, in any order")
  void withClockKeepsTheRest() {
    NodeCapabilities all =
        NodeCapabilities.millisecondPrecision()
            .withClock()
            .withFencing()
            .withStatus()
            .withReleaseNotifications();
    assertThat(all).isEqualTo(new NodeCapabilities(MS, true, true, true, true));
    assertThat(NodeCapabilities.millisecondPrecision().withFencing().withClock())
        .isEqualTo(new NodeCapabilities(MS, true, false, false, true));
  }

  @Test
  @DisplayName("the precision is still validated by the new canonical constructor")
  void precisionValidated() {
    assertThatThrownBy(() -> new NodeCapabilities(Duration.ZERO, false, false, false, true))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ttlPrecision must be positive");
  }

  @Test
  @DisplayName("a node that does not read its clock answers serverTime() with a clear failure")
  void serverTimeDefaultFails() {
    try (MapLockNode node = new MapLockNode("map-node")) {
      assertThatThrownBy(() -> node.serverTime().await(Duration.ofSeconds(1)))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("map-node")
          .hasMessageContaining("capabilities().clock() is false");
    }
  }
}
