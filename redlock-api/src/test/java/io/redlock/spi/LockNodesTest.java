package io.redlock.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.spi.testproviders.ClashOneProvider;
import io.redlock.spi.testproviders.ClashTwoProvider;
import io.redlock.spi.testproviders.MapLockNode;
import io.redlock.spi.testproviders.MemoryProvider;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@DisplayName("LockNodes: finding backends by URI scheme")
class LockNodesTest {

  private static List<MapLockNode> opened(String marker) {
    return MemoryProvider.OPENED.stream().filter(n -> n.name().contains(marker)).toList();
  }

  @Nested
  @DisplayName("discovery")
  class Discovery {
    @Test
    @DisplayName("a broken or missing provider does not hide the working ones")
    void brokenProvidersDoNotHideOthers() {
      LockNodes nodes = LockNodes.discover();

      assertThat(nodes.schemes()).contains("test-mem", "test-one", "test-clash");
      assertThat(nodes.problems())
          .anySatisfy(p -> assertThat(p).contains("BrokenProvider"))
          .anySatisfy(p -> assertThat(p).contains("NoSuchProvider"));
    }

    @Test
    @DisplayName("a provider declaring a malformed scheme is set aside with a message saying why")
    void malformedSchemeIsSetAside() {
      LockNodes nodes = LockNodes.discover();

      assertThat(nodes.schemes()).noneMatch(s -> s.contains("bad"));
      assertThat(nodes.problems())
          .anySatisfy(
              p ->
                  assertThat(p)
                      .contains("BadSchemeProvider", "Test-Bad://", "lower case", "'://'"));
    }

    @Test
    @DisplayName("a URI is opened by the provider of its scheme")
    void opensThroughTheProvider() {
      String marker = UUID.randomUUID().toString();
      try (LockNode node = LockNodes.discover().open("test-mem://" + marker)) {
        assertThat(node).isInstanceOf(MapLockNode.class);
        assertThat(node.name()).isEqualTo("test-mem://" + marker);
      }
    }

    @Test
    @DisplayName("a class loader that cannot see a provider does not offer its scheme")
    void loaderScopesDiscovery() {
      ClassLoader platform = ClassLoader.getPlatformClassLoader();

      assertThat(LockNodes.load(platform).schemes()).isEmpty();
    }
  }

  @Nested
  @DisplayName("errors")
  class Errors {
    @Test
    @DisplayName("an unknown scheme lists the schemes that are available")
    void unknownSchemeListsAvailable() {
      LockNodes nodes = LockNodes.discover();

      assertThatThrownBy(() -> nodes.open("nosuch://host:1"))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("nosuch://host:1")
          .hasMessageContaining("no backend for scheme 'nosuch'")
          .hasMessageContaining("Schemes available: test-clash, test-mem, test-one")
          .hasMessageContaining("META-INF/services/io.redlock.spi.LockNodeProvider");
    }

    @Test
    @DisplayName("a scheme of this project's backends names the module to add")
    void knownSchemeNamesTheModule() {
      LockNodes nodes = LockNodes.discover();

      assertThatThrownBy(() -> nodes.open("redis://localhost:6379"))
          .hasMessageContaining(
              "Add io.redlock:redlock-backend-redis to the class path for redis://");
      assertThatThrownBy(() -> nodes.open("jdbc:postgresql://db/locks"))
          .hasMessageContaining("io.redlock:redlock-backend-jdbc")
          .hasMessageContaining("org.postgresql:postgresql");
      assertThatThrownBy(() -> nodes.open("mongodb+srv://cluster/locks"))
          .hasMessageContaining("io.redlock:redlock-backend-mongo");
      assertThatThrownBy(() -> nodes.open("postgresql://locks@db/app"))
          .hasMessageContaining("io.redlock:redlock-backend-postgres");
    }

    @Test
    @DisplayName("host:port without a scheme is recognised as such")
    void hostPortWithoutScheme() {
      assertThatThrownBy(() -> LockNodes.discover().open("localhost:6379"))
          .hasMessageContaining(
              "'localhost:6379' looks like host:port without a scheme; write e.g."
                  + " redis://localhost:6379");
    }

    @Test
    @DisplayName("a scheme one typo away from a known one is suggested")
    void typoIsSuggested() {
      assertThatThrownBy(() -> LockNodes.discover().open("reddis://localhost:6379"))
          .hasMessageContaining("did you mean redis://?");
    }

    @Test
    @DisplayName("with no provider at all the error says so")
    void noProviderAtAll() {
      LockNodes none = LockNodes.of(List.of());

      assertThatThrownBy(() -> none.open("redis://localhost"))
          .hasMessageContaining("Schemes available: none (no io.redlock.spi.LockNodeProvider");
    }

    @Test
    @DisplayName("two providers claiming one scheme is an error naming both, not a silent pick")
    void duplicateClaimNamesBoth() {
      LockNodes nodes = LockNodes.discover();

      assertThatThrownBy(() -> nodes.open("test-clash://x"))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("scheme 'test-clash' is claimed by 2 providers")
          .hasMessageContaining(ClashOneProvider.class.getName())
          .hasMessageContaining(ClashTwoProvider.class.getName())
          .hasMessageContaining("remove all but one");
      assertThat(nodes.problems()).anySatisfy(p -> assertThat(p).contains("'test-clash'"));
    }

    @Test
    @DisplayName("the other scheme of a clashing provider still works")
    void clashDoesNotSpreadToOtherSchemes() {
      try (LockNode node = LockNodes.discover().open("test-one://y")) {
        assertThat(node.name()).isEqualTo("one:test-one://y");
      }
    }

    @Test
    @DisplayName("passwords never appear in discovery errors")
    void passwordsAreRedacted() {
      LockNodes nodes = LockNodes.discover();

      assertThatThrownBy(() -> nodes.open("nosuch://user:s3cret@host/db?password=hunter2"))
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain("s3cret", "hunter2"))
          .hasMessageContaining("nosuch://user:***@host/db?password=***");
      assertThatThrownBy(() -> nodes.open("test-mem://user:s3cret@host?explode=true"))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("MemoryProvider failed to open the node")
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain("s3cret"));
      assertThat(NodeUri.parse("redis://u:s3cret@h").toString()).doesNotContain("s3cret");
    }

    @Test
    @DisplayName("a URI without a scheme says what form is expected")
    void noScheme() {
      assertThatThrownBy(() -> LockNodes.discover().open("localhost"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("has no scheme; expected e.g. redis://host:6379");
    }
  }

  @Nested
  @DisplayName("opening several nodes")
  class OpenAll {
    @Test
    @DisplayName("opens every URI in order")
    void opensAll() {
      String m = UUID.randomUUID().toString();
      List<LockNode> nodes =
          LockNodes.discover()
              .openAll(List.of("test-mem://a-" + m, "test-one://b-" + m, "test-mem://c-" + m));

      assertThat(nodes)
          .extracting(LockNode::name)
          .containsExactly("test-mem://a-" + m, "one:test-one://b-" + m, "test-mem://c-" + m);
      nodes.forEach(LockNode::close);
    }

    @Test
    @DisplayName("if the k-th node fails to open, the nodes already opened are closed")
    void closesOpenedOnFailure() {
      String m = UUID.randomUUID().toString();

      assertThatThrownBy(
              () ->
                  LockNodes.discover()
                      .openAll(
                          List.of(
                              "test-mem://a-" + m,
                              "test-mem://b-" + m,
                              "test-mem://c-" + m + "?fail=true")))
          .isInstanceOf(RedlockException.class)
          .hasMessageContaining("refused to open");

      assertThat(opened(m)).hasSize(2).allMatch(MapLockNode::isClosed);
    }

    @Test
    @DisplayName("an unknown scheme anywhere in the list fails before any node is opened")
    void resolvesBeforeOpening() {
      String m = UUID.randomUUID().toString();

      assertThatThrownBy(
              () -> LockNodes.discover().openAll(List.of("test-mem://a-" + m, "nosuch://b")))
          .hasMessageContaining("no backend for scheme 'nosuch'");

      assertThat(opened(m)).isEmpty();
    }

    @Test
    @DisplayName("a URI listed twice is rejected: a quorum needs independent nodes")
    void repeatedUriIsRejected() {
      assertThatThrownBy(
              () -> LockNodes.discover().openAll(List.of("test-mem://x", " test-mem://x")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'test-mem://x' is listed twice");
    }

    @Test
    @DisplayName("a null URI in the list is named by its position, with what to pass instead")
    void nullUri() {
      assertThatThrownBy(
              () ->
                  LockNodes.discover().openAll(Arrays.asList("test-mem://a", null, "test-mem://c")))
          .isInstanceOf(NullPointerException.class)
          .hasMessage(
              "node URI #2 of 3 is null; pass a URI such as redis://host:6379 in its place, or"
                  + " leave it out");
    }

    @Test
    @DisplayName("an empty list is rejected with an example")
    void emptyList() {
      assertThatThrownBy(() -> LockNodes.discover().openAll(List.of()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("no node URIs given");
    }
  }
}
