package io.redlock.postgres;

import io.redlock.sql.internal.KeyCodec;
import io.redlock.sql.internal.PostgresDialect;
import io.redlock.sql.internal.TableName;
import io.redlock.tck.KeyInspector;
import io.redlock.testservers.FreePorts;
import io.redlock.testservers.PostgresServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

/**
 * The servers of this module's tests, started on first use and stopped when the JVM exits: a plain
 * one (SCRAM-SHA-256 over TCP, as initdb set it up) and one with TLS and every password method,
 * with a clear-text user and an MD5 user.
 */
final class TestServers {
  static final String CLEARTEXT_PASSWORD = "clear-text-pw";
  static final String MD5_USER = "redlock_md5";
  static final String MD5_PASSWORD = "md5-user-pw";

  private static PostgresServer plain;
  private static PostgresServer tls;

  private TestServers() {}

  /** The plain local server (SCRAM-SHA-256 for host connections). */
  static synchronized PostgresServer plain() {
    if (plain == null) {
      PostgresServer server = PostgresServer.startLocal();
      Runtime.getRuntime().addShutdownHook(new Thread(server::close, "stop-test-postgres"));
      plain = server;
    }
    return plain;
  }

  /** The local server with TLS, a clear-text-password user and an MD5 user. */
  static synchronized PostgresServer tls() {
    if (tls == null) {
      PostgresServer server = PostgresServer.startLocalWithTls();
      Runtime.getRuntime().addShutdownHook(new Thread(server::close, "stop-test-postgres-tls"));
      execute(
          server.jdbcUrl() + "&sslmode=disable",
          "SET password_encryption = 'md5'",
          "CREATE ROLE " + MD5_USER + " LOGIN SUPERUSER PASSWORD '" + MD5_PASSWORD + "'",
          "RESET password_encryption",
          "CREATE ROLE "
              + PostgresServer.CLEARTEXT_USER
              + " LOGIN SUPERUSER PASSWORD '"
              + CLEARTEXT_PASSWORD
              + "'");
      tls = server;
    }
    return tls;
  }

  /** {@code postgresql://user:password@127.0.0.1:port/postgres} plus {@code query} (no '?'). */
  static String uri(PostgresServer server, String user, String password, String query) {
    return "postgresql://"
        + user
        + ":"
        + password
        + "@127.0.0.1:"
        + server.port()
        + "/postgres"
        + (query.isEmpty() ? "" : "?" + query);
  }

  /** The superuser's URI on {@code server}, plain TCP. */
  static String uri(PostgresServer server) {
    return uri(server, PostgresServer.USER, PostgresServer.PASSWORD, "sslmode=disable");
  }

  /** A table name no other test uses. */
  static String uniqueTable(String prefix) {
    return prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  /** A loopback port where nothing listens. */
  static int closedPort() {
    return FreePorts.find();
  }

  /** Runs SQL on a plain pgjdbc connection (outside any node). */
  static void execute(String jdbcUrl, String... sql) {
    try (Connection c = DriverManager.getConnection(jdbcUrl);
        Statement s = c.createStatement()) {
      for (String statement : sql) {
        s.execute(statement);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not run " + String.join("; ", sql), e);
    }
  }

  /** The kit's backdoor: reads a key over pgjdbc with the dialect's own inspect statement. */
  static KeyInspector inspector(String jdbcUrl, String table) {
    try {
      Connection c = DriverManager.getConnection(jdbcUrl);
      String sql = new PostgresDialect().inspect(new TableName(table));
      return new KeyInspector() {
        @Override
        public Optional<KeyState> inspect(String key) {
          try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setBytes(1, KeyCodec.hash(KeyCodec.encode(key)));
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                return Optional.empty();
              }
              return Optional.of(
                  new KeyState(
                      KeyCodec.decode(rs.getBytes(1)), Duration.ofNanos(rs.getLong(2) * 1000)));
            }
          } catch (SQLException e) {
            throw new IllegalStateException("backdoor read failed", e);
          }
        }

        @Override
        public void close() {
          try {
            c.close();
          } catch (SQLException ignored) {
            // a test connection
          }
        }
      };
    } catch (SQLException e) {
      throw new IllegalStateException("backdoor connection failed", e);
    }
  }
}
