package io.redlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.tck.PasswordLeaks;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** What the Redis URI parser says about a URI never shows a piece of its password. */
class RedisUriRedactionTest {
  static final List<String> SHAPES =
      List.of(
          "redis://:{P}@127.0.0.1:18104",
          "redis://locks:{P}@127.0.0.1:18104/0",
          "rediss://locks:{P}@h.example:6380",
          "redis://{P}@127.0.0.1",
          "redis://:{P}@",
          "redis://:{P}@/0",
          "redis://:{P}@127.0.0.1:notaport",
          "redis://:{P}@127.0.0.1:99999",
          "redis://:{P}@127.0.0.1/x",
          "redis://:{P}@127.0.0.1?poolsize=2",
          "redis://127.0.0.1:6379?password={E}",
          "redis://127.0.0.1:6379/0?user=u&password={E}&poolSize=x");

  @Test
  @DisplayName("no piece of a password shows in an error or in the result, whatever the shape")
  void noPieceOfAPasswordShows() {
    assertThat(
            PasswordLeaks.assertNoPieceShows(
                SHAPES,
                uri -> {
                  try (RedisLockNode node = RedisLockNode.fromUri(uri)) {
                    return node.toString();
                  }
                }))
        .isPositive();
  }

  @Test
  @DisplayName("an unencoded '@' in the password: no part of it shows, and the fix is named")
  void atInPassword() {
    assertThatThrownBy(() -> RedisLockNode.builder().uri("redis://:pa@ss@127.0.0.1:18104"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'redis://:***@127.0.0.1:18104'")
        .hasMessageContaining("%40")
        .hasMessageNotContaining("ss@");
  }

  @Test
  @DisplayName("a bad port names the URI, password hidden")
  void badPortNamesTheUri() {
    for (String uri :
        List.of("redis://:s3cret@127.0.0.1:99999", "rediss://u:s3cret@127.0.0.1:notaport")) {
      assertThatThrownBy(() -> RedisLockNode.builder().uri(uri))
          .as(uri)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("has a bad port")
          .hasMessageContaining("@127.0.0.1:")
          .hasMessageNotContaining("s3cret");
    }
  }
}
