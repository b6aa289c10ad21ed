package io.redlock.mongo.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.tck.PasswordLeaks;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** What this backend's URI parser says about a URI never shows a piece of its password. */
class MongoUriRedactionTest {
  /** {P}: the password unencoded; {E}: percent-encoded (see {@link PasswordLeaks}). */
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
    assertThat(PasswordLeaks.assertNoPieceShows(SHAPES, MongoUri::parse)).isPositive();
  }
}
