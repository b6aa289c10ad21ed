package io.redlock.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.tck.PasswordLeaks;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** What this backend's URI parser says about a URI never shows a piece of its password. */
class JdbcOptionsRedactionTest {
  /** {P}: the password unencoded; {E}: percent-encoded (see {@link PasswordLeaks}). */
  static final List<String> SHAPES =
      List.of(
          "jdbc:postgresql://h:5432/db?user=locks&password={E}",
          "jdbc:postgresql://locks:{P}@h:notaport/db",
          "jdbc:mariadb://locks:{P}@h:3306/db?redlock.nope=1",
          "jdbc:mariadb://h:notaport/db?password={E}",
          "jdbc:mariadb://:{P}@h:99999/db");

  @Test
  @DisplayName("no piece of a password shows in an error or in the result, whatever the shape")
  void noPieceOfAPasswordShows() {
    assertThat(PasswordLeaks.assertNoPieceShows(SHAPES, uri -> JdbcOptions.parse(uri).options()))
        .isPositive();
  }
}
