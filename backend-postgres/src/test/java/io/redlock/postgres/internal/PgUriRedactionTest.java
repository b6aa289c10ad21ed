package io.redlock.postgres.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.tck.PasswordLeaks;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** What this backend's URI parser says about a URI never shows a piece of its password. */
class PgUriRedactionTest {
  /** {P}: the password unencoded; {E}: percent-encoded (see {@link PasswordLeaks}). */
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
    assertThat(PasswordLeaks.assertNoPieceShows(SHAPES, uri -> PgUri.parse(uri).name()))
        .isPositive();
  }
}
