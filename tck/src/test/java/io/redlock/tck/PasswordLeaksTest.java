package io.redlock.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.spi.NodeUri;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("PasswordLeaks")
class PasswordLeaksTest {
  private static final List<String> SHAPES =
      List.of("redis://:{P}@h:6379", "redis://h?password={E}");

  @Test
  @DisplayName("catches a parser that echoes the URI, or a piece of it in an exception")
  void catchesLeaks() {
    assertThatThrownBy(() -> PasswordLeaks.assertNoPieceShows(SHAPES, uri -> uri))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("redis://:{P}@h:6379");
    assertThatThrownBy(
            () ->
                PasswordLeaks.assertNoPieceShows(
                    SHAPES,
                    uri -> {
                      throw new IllegalStateException(
                          "wrapped", new IllegalArgumentException(uri.substring(10, 12)));
                    }))
        .isInstanceOf(AssertionError.class);
  }

  @Test
  @DisplayName("passes a parser that shows the URI redacted")
  void passesRedaction() {
    assertThat(PasswordLeaks.assertNoPieceShows(SHAPES, NodeUri::redactUri))
        .isEqualTo(PasswordLeaks.PASSWORDS.size() * SHAPES.size());
  }
}
