package io.redlock.postgres;

import io.redlock.testservers.PostgresServer;
import org.junit.jupiter.api.DisplayName;

/**
 * The kit with the clear-text password method ({@code password} in {@code pg_hba.conf}), over TCP
 * without TLS.
 */
@DisplayName("TCK on a real PostgreSQL server, Vert.x client, clear-text password")
class PostgresPasswordCompatibilityTest extends PostgresCompatibilityTest {
  private static final String TABLE = TestServers.uniqueTable("tck_password");

  @Override
  PostgresServer server() {
    return TestServers.tls();
  }

  @Override
  String uri() {
    return TestServers.uri(server(), PostgresServer.CLEARTEXT_USER, secret(), "sslmode=disable");
  }

  @Override
  String table() {
    return TABLE;
  }

  @Override
  String secret() {
    return TestServers.CLEARTEXT_PASSWORD;
  }
}
