package io.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.spi.LockNode;
import io.redlock.spi.testproviders.CapturingEngineProvider;
import io.redlock.spi.testproviders.MapLockNode;
import io.redlock.spi.testproviders.MemoryProvider;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("RedlockBuilder: nodes by URI")
class RedlockBuilderUrisTest {

  private static List<MapLockNode> opened(String marker) {
    return MemoryProvider.OPENED.stream().filter(n -> n.name().contains(marker)).toList();
  }

  private static List<LockNode> configuredNodes(Redlock redlock) {
    return ((CapturingEngineProvider.Captured) redlock).config().nodes();
  }

  @Test
  @DisplayName("nodes given by URI reach the engine in order, mixed with nodes given as objects")
  void urisAndObjectsMix() {
    String m = UUID.randomUUID().toString();
    MapLockNode object = new MapLockNode("object-" + m);

    try (Redlock redlock =
        Redlock.builder()
            .nodes("test-mem://a-" + m, "test-one://b-" + m)
            .nodes(object)
            .nodeUris(List.of("test-mem://c-" + m))
            .build()) {
      assertThat(redlock.nodes())
          .containsExactly(
              "test-mem://a-" + m, "one:test-one://b-" + m, "object-" + m, "test-mem://c-" + m);
      assertThat(configuredNodes(redlock).get(2)).isSameAs(object);
    }
  }

  @Test
  @DisplayName("a null among the nodes or URIs is named by its position, not a bare NPE")
  void nullNamedByPosition() {
    MapLockNode a = new MapLockNode("a-" + UUID.randomUUID());
    assertThatThrownBy(() -> Redlock.builder().nodes(a, null, a))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("node #2 of 3 is null");
    assertThatThrownBy(() -> Redlock.builder().nodes("test-mem://x", null, "test-mem://y"))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("#2 of 3 is null");
  }

  @Test
  @DisplayName("an unknown scheme fails when the URI is added, before anything is opened")
  void unknownSchemeFailsEarly() {
    String m = UUID.randomUUID().toString();
    RedlockBuilder builder = Redlock.builder().nodes("test-mem://a-" + m);

    assertThatThrownBy(() -> builder.nodes("redis://localhost:6379"))
        .isInstanceOf(RedlockNonTransientException.class)
        .hasMessageContaining("Add io.redlock:redlock-backend-redis")
        .hasMessageContaining("Schemes available:");
    assertThat(opened(m)).isEmpty();
  }

  @Test
  @DisplayName("if a node fails to open during build, the nodes the builder opened are closed")
  void buildClosesWhatItOpened() {
    String m = UUID.randomUUID().toString();
    MapLockNode object = new MapLockNode("object-" + m);
    RedlockBuilder builder =
        Redlock.builder()
            .nodes("test-mem://a-" + m, "test-mem://b-" + m)
            .nodes(object)
            .nodes("test-mem://c-" + m + "?fail=true");

    assertThatThrownBy(builder::build).hasMessageContaining("refused to open");

    assertThat(opened(m)).hasSize(2).allMatch(MapLockNode::isClosed);
    assertThat(object.isClosed()).as("a node given as an object stays the caller's").isFalse();
  }

  @Test
  @DisplayName("if the engine fails, the nodes the builder opened are closed")
  void engineFailureClosesNodes() {
    String m = UUID.randomUUID().toString();
    RedlockBuilder builder = Redlock.builder().nodes("test-mem://a-" + m, "test-mem://b-" + m);
    CapturingEngineProvider.failNext = true;

    assertThatThrownBy(builder::build).hasMessageContaining("engine failed on purpose");

    assertThat(opened(m)).hasSize(2).allMatch(MapLockNode::isClosed);
  }

  @Test
  @DisplayName("the same URI twice is rejected, also across calls")
  void repeatsRejected() {
    RedlockBuilder builder = Redlock.builder().nodes("test-mem://same");

    assertThatThrownBy(() -> builder.nodes("test-mem://same"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("listed twice");
  }

  @Test
  @DisplayName("nodesFromEnvironment reads the system property redlock.nodes")
  void fromSystemProperty() {
    String m = UUID.randomUUID().toString();
    String previous = System.getProperty("redlock.nodes");
    System.setProperty("redlock.nodes", "test-mem://a-" + m + ", test-mem://b-" + m);
    try (Redlock redlock = Redlock.builder().nodesFromEnvironment().build()) {
      assertThat(redlock.nodes()).containsExactly("test-mem://a-" + m, "test-mem://b-" + m);
    } finally {
      restore(previous);
    }
  }

  @Test
  @DisplayName("a bad URI in the environment names where it came from")
  void badUriNamesItsSource() {
    String previous = System.getProperty("redlock.nodes");
    System.setProperty("redlock.nodes", "test-mem://x localhost");
    try {
      assertThatThrownBy(() -> Redlock.builder().nodesFromEnvironment())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'localhost' has no scheme")
          .hasMessageContaining("(in system property redlock.nodes)");
    } finally {
      restore(previous);
    }
  }

  private static void restore(String previous) {
    if (previous == null) {
      System.clearProperty("redlock.nodes");
    } else {
      System.setProperty("redlock.nodes", previous);
    }
  }
}
