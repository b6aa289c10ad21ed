package io.redlock.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How the wire transport reads a URL: as pgjdbc does, or refusing, without showing secrets. */
class PgWireSettingsTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(5);
  private static final String URL = "jdbc:postgresql://127.0.0.1:5432/app?user=app";

  private static PgWireSettings parse(String url, Properties defaults) {
    return PgWireSettings.parse(url, TIMEOUT, TIMEOUT, defaults);
  }

  @Test
  void readsPgjdbcsDriverconfigFilesTheFirstFoundWinning(@TempDir Path dir) throws Exception {
    Path first = dir.resolve("first/org/postgresql");
    Path second = dir.resolve("second/org/postgresql");
    Files.createDirectories(first);
    Files.createDirectories(second);
    Files.writeString(first.resolve("driverconfig.properties"), "currentSchema=locks\n");
    Files.writeString(
        second.resolve("driverconfig.properties"),
        "currentSchema=other\nApplicationName=from-second\n");
    try (URLClassLoader loader =
        new URLClassLoader(
            new URL[] {dir.resolve("first").toUri().toURL(), dir.resolve("second").toUri().toURL()},
            null)) {
      Properties defaults = PgWireSettings.driverDefaults(loader);
      assertThat(defaults.getProperty("currentSchema")).isEqualTo("locks");
      assertThat(defaults.getProperty("ApplicationName")).isEqualTo("from-second");

      // the same schema as the JDBC connections, which pgjdbc gives these defaults too
      PgWireSettings settings = parse(URL, defaults);
      assertThat(settings.searchPath()).isEqualTo("locks");
      // the URL wins over the file, as in pgjdbc
      assertThat(parse(URL + "&currentSchema=mine", defaults).searchPath()).isEqualTo("mine");
    }
  }

  @Test
  void aServiceFilesSettingsComeBeforeTheDriverDefaults(@TempDir Path dir) throws Exception {
    // as pgjdbc's Driver.connect: URL, then the service file, then driverconfig.properties
    Path services = dir.resolve("pg_service.conf");
    Files.writeString(services, "[locks]\nhost=127.0.0.1\nport=5432\nuser=locker\n");
    Properties defaults = new Properties();
    defaults.setProperty("user", "app");
    String before = System.getProperty("org.postgresql.pgservicefile");
    System.setProperty("org.postgresql.pgservicefile", services.toString());
    try {
      PgWireSettings settings = parse("jdbc:postgresql://?service=locks", defaults);
      assertThat(settings.user()).isEqualTo("locker");
    } finally {
      if (before == null) {
        System.clearProperty("org.postgresql.pgservicefile");
      } else {
        System.setProperty("org.postgresql.pgservicefile", before);
      }
    }
  }

  @Test
  void anOptionItCannotHonourInTheDriverDefaultsIsRefusedToo() {
    Properties defaults = new Properties();
    defaults.setProperty("sslcert", "/etc/client.crt");
    assertThatThrownBy(() -> parse(URL, defaults))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[sslcert]");
  }

  @Test
  void neverShowsWhatMayBePartOfAPassword() {
    // an unencoded '&' in a password: pgjdbc reads its tail as an option name
    assertThatThrownBy(() -> parse(URL + "&password=s3cr&tail-of-secret", new Properties()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1 option(s) pgjdbc does not know")
        .hasMessageNotContaining("tail-of-secret")
        .hasMessageNotContaining("s3cr");
    // user information before the host, which pgjdbc does not read
    assertThatThrownBy(
            () -> parse("jdbc:postgresql://app:hunter2@127.0.0.1:5432/app", new Properties()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("user:password@host")
        .hasMessageNotContaining("hunter2");
    assertThatThrownBy(
            () -> parse("jdbc:postgresql://app:hunter2@h1:5432,h2:5432/app", new Properties()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageNotContaining("hunter2");
  }
}
