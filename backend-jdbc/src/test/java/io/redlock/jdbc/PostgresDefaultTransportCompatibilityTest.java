package io.redlock.jdbc;

import org.junit.jupiter.api.DisplayName;

/**
 * The kit on PostgreSQL nodes with the default transport ({@code redlock.wireProtocol=auto}): each
 * new node's first calls go over JDBC, and the later ones over the wire protocol once its first
 * connection has opened, so the kit sees both, and the switch, on one table.
 */
@DisplayName("TCK on a real PostgreSQL server, default transport")
class PostgresDefaultTransportCompatibilityTest extends PostgresCompatibilityTest {
  @Override
  String transportOptions() {
    return "";
  }
}
