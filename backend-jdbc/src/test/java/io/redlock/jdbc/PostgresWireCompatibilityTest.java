package io.redlock.jdbc;

import org.junit.jupiter.api.DisplayName;

/**
 * The kit on PostgreSQL nodes whose lock calls speak the wire protocol ({@code
 * redlock.wireProtocol=true}), on the same table as {@link PostgresCompatibilityTest}, with release
 * notifications on so that the R14 rules run too.
 */
@DisplayName("TCK on a real PostgreSQL server, wire protocol")
class PostgresWireCompatibilityTest extends PostgresCompatibilityTest {
  @Override
  String transportOptions() {
    return "&redlock.wireProtocol=true";
  }
}
