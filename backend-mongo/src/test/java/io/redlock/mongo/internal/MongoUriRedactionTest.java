package io.redlock.mongo.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** What this backend's URI parser says about a URI never shows a piece of its password. */
class MongoUriRedactionTest {
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
          "mongodb://locks:{P}@h:27017/db?authSource=admin",
          "mongodb://locks:{P}@a:27017,b:27018/db",
          "mongodb://locks:{P}@h:nope/db",
          "mongodb+srv://locks:{P}@cluster.example/db",
          "mongodb://h/db?tlsCertificateKeyFilePassword={E}&w=majority",
          "mongodb://locks:{P}@h/db?redlock.nope=1",
          "mongodb://h/db?authMechanismProperties=AWS_SESSION_TOKEN:{E}");

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
          seen.add(String.valueOf(MongoUri.parse(uri)));
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
