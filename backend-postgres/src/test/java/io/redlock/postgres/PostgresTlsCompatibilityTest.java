package io.redlock.postgres;

import io.redlock.testservers.PostgresServer;
import org.junit.jupiter.api.DisplayName;

/**
 * The kit over TLS with {@code sslmode=verify-full}: the server's self-signed certificate (for
 * 127.0.0.1) trusted through {@code sslrootcert}, the superuser authenticating with SCRAM-SHA-256
 * inside TLS.
 */
@DisplayName("TCK on a real PostgreSQL server, Vert.x client, TLS verify-full")
class PostgresTlsCompatibilityTest extends PostgresCompatibilityTest {
  private static final String TABLE = TestServers.uniqueTable("tck_tls");

  @Override
  PostgresServer server() {
    return TestServers.tls();
  }

  @Override
  String uri() {
    return TestServers.uri(
        server(),
        PostgresServer.USER,
        PostgresServer.PASSWORD,
        "sslmode=verify-full&sslrootcert=" + server().certificate());
  }

  @Override
  String table() {
    return TABLE;
  }
}
