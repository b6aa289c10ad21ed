package io.redlock.postgres.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** What this backend's URI parser says about a URI never shows a piece of its password. */
class PgUriRedactionTest {
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

  /** {P}: the password unencoded; {E}: percent-encoded. */
  static final List<String> SHAPES =
      List.of(
          "postgresql://locks:{P}@h/db",
          "postgresql://locks:{P}@h:5432/db?sslmode=disable",
          "postgres://locks:{P}@/db",
          "postgresql://locks:{P}@h:bad/db",
          "postgresql://h/db?user=locks&password={E}",
          "postgresql://locks:{P}@h/db?redlock.nope=1",
          "postgresql://locks:{P}@a,b/db",
          "postgresql://:{P}@h:99999/db");

  @Test
  @DisplayName("no piece of a password shows in an error or in the result, whatever the shape")
  void noPieceOfAPasswordShows() {
    int checked = 0;
    for (String password : PASSWORDS) {
      String encoded = URLEncoder.encode(password, StandardCharsets.UTF_8);
      for (String shape : SHAPES) {
        String uri = shape.replace("{P}", password).replace("{E}", encoded);
        List<String> seen = new ArrayList<>();
        try {
          seen.add(String.valueOf(PgUri.parse(uri).name()));
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
    assertThat(checked).isGreaterThanOrEqualTo(PASSWORDS.size() * SHAPES.size());
  }
}
