package io.redlock.testservers;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * CI workspaces have long paths. The servers keep their files under {@code target/} of the
 * checkout, and a Unix socket's path is limited to 107 bytes: a socket there made PostgreSQL and
 * MariaDB refuse to start in a deep checkout. This starts both with their files under a folder
 * whose path is over 150 characters long.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@DisplayName("Servers under a long path")
class LongPathTest {

  @Test
  @DisplayName("PostgreSQL and MariaDB start and answer with their folder 150+ characters deep")
  void deepCheckout() throws Exception {
    Path deep = Path.of("target", "long-path-test").toAbsolutePath();
    while (deep.toString().length() < 160) {
      deep = deep.resolve("a-checkout-folder-with-a-long-name");
    }
    Files.createDirectories(deep);
    String was = System.getProperty(Binaries.SCRATCH_BASE_PROPERTY);
    System.setProperty(Binaries.SCRATCH_BASE_PROPERTY, deep.toString());
    try (PostgresServer pg = PostgresServer.startLocal();
        MariaDbServer maria = MariaDbServer.startLocal();
        Connection a = DriverManager.getConnection(pg.jdbcUrl());
        Connection b = DriverManager.getConnection(maria.jdbcUrl())) {
      assertThat(deep.toString().length()).isGreaterThanOrEqualTo(150);
      assertThat(a.isValid(5)).isTrue();
      assertThat(b.isValid(5)).isTrue();
    } finally {
      if (was == null) {
        System.clearProperty(Binaries.SCRATCH_BASE_PROPERTY);
      } else {
        System.setProperty(Binaries.SCRATCH_BASE_PROPERTY, was);
      }
    }
  }
}
