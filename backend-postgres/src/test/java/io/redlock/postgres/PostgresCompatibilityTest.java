package io.redlock.postgres;

import io.redlock.spi.LockNode;
import io.redlock.tck.KeyInspector;
import io.redlock.tck.LockNodeCompatibilityKit;
import io.redlock.testservers.PostgresServer;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;

/**
 * The kit on the plain local server: TCP without TLS, the superuser authenticating with
 * SCRAM-SHA-256 (initdb's {@code --auth-host=scram-sha-256}), release notifications on so that the
 * R14 rules run too. {@link PostgresPasswordCompatibilityTest} runs it with a clear-text password
 * and {@link PostgresTlsCompatibilityTest} over TLS with {@code sslmode=verify-full}.
 */
@DisplayName("TCK on a real PostgreSQL server, Vert.x client, SCRAM-SHA-256")
class PostgresCompatibilityTest extends LockNodeCompatibilityKit {
  private static final String TABLE = TestServers.uniqueTable("tck");

  /** The server under test. */
  PostgresServer server() {
    return TestServers.plain();
  }

  /** The URI of a node on {@link #server()}, without the table options. */
  String uri() {
    return TestServers.uri(
        server(), PostgresServer.USER, PostgresServer.PASSWORD, "sslmode=disable");
  }

  String table() {
    return TABLE;
  }

  @Override
  protected LockNode createNode() {
    return PostgresLockNode.builder()
        .uri(uri() + "&redlock.table=" + table() + "&redlock.createTable=true")
        .releaseNotifications(true)
        .build();
  }

  @Override
  protected Optional<KeyInspector> keyInspector() {
    return Optional.of(TestServers.inspector(server().jdbcUrl(), table()));
  }

  @Override
  protected Optional<LockNode> createUnreachableNode() {
    return Optional.of(
        PostgresLockNode.fromUri(
            "postgresql://postgres:"
                + secret()
                + "@127.0.0.1:"
                + TestServers.closedPort()
                + "/postgres?sslmode=disable&redlock.table="
                + table()));
  }

  String secret() {
    return PostgresServer.PASSWORD;
  }

  @Override
  protected Optional<String> configuredSecret() {
    return Optional.of(secret());
  }

  /** Crashes the local server the way {@code pg_ctl -m immediate stop} does, restarts it. */
  @Override
  protected boolean restartStore() {
    server().crash();
    server().restart();
    return true;
  }
}
