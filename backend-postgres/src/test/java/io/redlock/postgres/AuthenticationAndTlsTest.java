package io.redlock.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.RedlockNonTransientException;
import io.redlock.testservers.PostgresServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * What the kit cannot see: that the TLS nodes really encrypt, that each password method
 * authenticates, and that a certificate that does not match is refused for good.
 */
@DisplayName("Authentication methods and TLS on a real PostgreSQL server")
class AuthenticationAndTlsTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(10);

  private static PostgresServer server() {
    return TestServers.tls();
  }

  /** Takes and releases a key on a node of {@code uri}; returns whether its connection used TLS. */
  private static boolean lockAndTellTls(String uri) throws Exception {
    String app = "redlock_test_" + UUID.randomUUID().toString().substring(0, 8);
    try (PostgresLockNode node =
        PostgresLockNode.fromUri(uri + "&application_name=" + app + "&redlock.createTable=true")) {
      String token = UUID.randomUUID().toString();
      assertThat(node.tryAcquire("auth-tls", token, TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.release("auth-tls", token).await(WAIT)).isTrue();
      try (Connection c = DriverManager.getConnection(server().jdbcUrl() + "&sslmode=disable");
          Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery(
                  "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)"
                      + " WHERE a.application_name = '"
                      + app
                      + "'")) {
        assertThat(rs.next()).as("the node's connection is listed").isTrue();
        return rs.getBoolean(1);
      }
    }
  }

  @Test
  @DisplayName("sslmode=verify-full with sslrootcert encrypts, with SCRAM-SHA-256 inside")
  void verifyFullEncrypts() throws Exception {
    String uri =
        TestServers.uri(
            server(),
            PostgresServer.USER,
            PostgresServer.PASSWORD,
            "sslmode=verify-full&sslrootcert=" + server().certificate());
    assertThat(lockAndTellTls(uri)).isTrue();
  }

  @Test
  @DisplayName("sslmode=require encrypts without checking the certificate, as libpq does")
  void requireEncrypts() throws Exception {
    String uri =
        TestServers.uri(server(), PostgresServer.USER, PostgresServer.PASSWORD, "sslmode=require");
    assertThat(lockAndTellTls(uri)).isTrue();
  }

  @Test
  @DisplayName("sslmode=disable, clear-text and MD5 password methods authenticate")
  void passwordMethodsAuthenticate() throws Exception {
    assertThat(
            lockAndTellTls(
                TestServers.uri(
                    server(),
                    PostgresServer.CLEARTEXT_USER,
                    TestServers.CLEARTEXT_PASSWORD,
                    "sslmode=disable")))
        .isFalse();
    assertThat(
            lockAndTellTls(
                TestServers.uri(
                    server(), TestServers.MD5_USER, TestServers.MD5_PASSWORD, "sslmode=disable")))
        .isFalse();
  }

  @Test
  @DisplayName("verify-full refuses a host name the certificate does not name, for good")
  void verifyFullRefusesAnotherHostName() {
    // the certificate names IP 127.0.0.1 only
    String uri =
        "postgresql://postgres:"
            + PostgresServer.PASSWORD
            + "@localhost:"
            + server().port()
            + "/postgres?sslmode=verify-full&sslrootcert="
            + server().certificate();
    try (PostgresLockNode node = PostgresLockNode.fromUri(uri)) {
      assertThatThrownBy(() -> node.tryAcquire("k", "t", TTL).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("certificate")
          .hasMessageNotContaining(PostgresServer.PASSWORD);
    }
  }

  @Test
  @DisplayName("verify-ca refuses a certificate signed by another CA, for good")
  void verifyCaRefusesAnotherCa() throws Exception {
    Path dir = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "other-ca");
    Path other = PostgresServer.selfSignedCertificate(dir, "other", "other");
    String uri =
        TestServers.uri(
            server(),
            PostgresServer.USER,
            PostgresServer.PASSWORD,
            "sslmode=verify-ca&sslrootcert=" + other);
    try (PostgresLockNode node = PostgresLockNode.fromUri(uri)) {
      assertThatThrownBy(() -> node.tryAcquire("k", "t", TTL).await(WAIT))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("certificate")
          .hasMessageContaining(node.name());
    }
  }
}
