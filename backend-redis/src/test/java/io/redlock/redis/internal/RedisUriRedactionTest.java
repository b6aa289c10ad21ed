package io.redlock.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** What the Redis URI parser says about a URI never shows a piece of its password. */
class RedisUriRedactionTest {
  static final List<String> PASSWORDS =
      List.of(
          "QX@ZJ",
          "QX ZJ",
          "QX/ZJ",
          "QX?ZJ",
          "QX#ZJ",
          "QX:ZJ",
          "QX%ZJ",
          "QX,ZJ",
          "QX&ZJ",
          "QX'ZJ",
          "QX[Z]J",
          "Q@X:Z/J?QX#ZJ Q@Z");

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
  @DisplayName("no piece of a password shows in an error or in the settings, whatever the shape")
  void noPieceOfAPasswordShows() {
    int checked = 0;
    for (String password : PASSWORDS) {
      String encoded = URLEncoder.encode(password, StandardCharsets.UTF_8);
      for (String shape : SHAPES) {
        if (shape.contains("//{P}") && password.contains(":")) {
          continue; // redis://QX:ZJ@h is the user QX with the password ZJ
        }
        String uri = shape.replace("{P}", password).replace("{E}", encoded);
        List<String> seen = new ArrayList<>();
        try {
          seen.add(new RedisSettingsBuilder().uri(uri).build().toString());
        } catch (RuntimeException e) {
          for (Throwable t = e; t != null; t = t.getCause()) {
            seen.add(t.toString());
          }
        }
        for (String message : seen) {
          for (int n = 2; n <= password.length(); n++) {
            for (int i = 0; i + n <= password.length(); i++) {
              assertThat(message).as("URI '%s'", uri).doesNotContain(password.substring(i, i + n));
            }
          }
          checked++;
        }
      }
    }
    assertThat(checked).isGreaterThan(PASSWORDS.size() * (SHAPES.size() - 2));
  }

  @Test
  @DisplayName("an unencoded '@' in the password: no part of it shows, and the fix is named")
  void atInPassword() {
    assertThatThrownBy(() -> new RedisSettingsBuilder().uri("redis://:pa@ss@127.0.0.1:18104"))
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
      assertThatThrownBy(() -> new RedisSettingsBuilder().uri(uri))
          .as(uri)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("has a bad port")
          .hasMessageContaining("@127.0.0.1:")
          .hasMessageNotContaining("s3cret");
    }
  }
}
