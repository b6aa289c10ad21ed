package io.redlock.it;

import io.redlock.testservers.PostgresServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

/** Checks on what real nodes hold, shared by the mixed-quorum tests. */
final class ServerChecks {
  private ServerChecks() {}

  /** A condition on the servers' state. */
  @FunctionalInterface
  interface Check {
    boolean holds() throws Exception;
  }

  /** Polls a check for up to 10 s: late answers are released a moment after the attempt. */
  static boolean settled(Check check) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!check.holds()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(50);
    }
    return true;
  }

  /** Unexpired rows for {@code key} on a PostgreSQL node, read with the server's clock. */
  static int livePostgresRows(PostgresServer server, String key) throws SQLException {
    try (Connection c = DriverManager.getConnection(server.jdbcUrl());
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM redlock_locks"
                    + " WHERE lock_key = ? AND expires_at > clock_timestamp()")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }
}
