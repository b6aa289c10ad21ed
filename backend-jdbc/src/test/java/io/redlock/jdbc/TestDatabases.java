package io.redlock.jdbc;

import io.redlock.sql.internal.Dialect;
import io.redlock.sql.internal.TableName;
import io.redlock.tck.KeyInspector;
import io.redlock.testservers.FreePorts;
import io.redlock.testservers.MariaDbServer;
import io.redlock.testservers.PostgresServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

/** The databases of this module's tests: one PostgreSQL and one MariaDB per JVM, SQLite and H2. */
public final class TestDatabases {
  private static PostgresServer postgres;
  private static MariaDbServer mariadb;

  private TestDatabases() {}

  /** The shared PostgreSQL server, started on first use and stopped when the JVM exits. */
  public static synchronized PostgresServer postgres() {
    if (postgres == null) {
      PostgresServer server = PostgresServer.start();
      Runtime.getRuntime().addShutdownHook(new Thread(server::close, "stop-test-postgres"));
      postgres = server;
    }
    return postgres;
  }

  /** The shared MariaDB server, started on first use and stopped when the JVM exits. */
  static synchronized MariaDbServer mariadb() {
    if (mariadb == null) {
      MariaDbServer server = MariaDbServer.start();
      Runtime.getRuntime().addShutdownHook(new Thread(server::close, "stop-test-mariadb"));
      mariadb = server;
    }
    return mariadb;
  }

  /** A fresh SQLite file under {@code target/sqlite}. */
  static String sqliteUrl(String name) {
    try {
      Path dir = Path.of("target", "sqlite").toAbsolutePath();
      Files.createDirectories(dir);
      return "jdbc:sqlite:" + dir.resolve(name + "-" + UUID.randomUUID() + ".db");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A fresh in-memory H2 database that lives until the JVM exits. */
  static String h2Url(String name) {
    return "jdbc:h2:mem:" + name + "-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
  }

  /** A table name no other test uses. */
  static String uniqueTable(String prefix) {
    return prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  /** A loopback port where nothing listens. */
  static int closedPort() {
    return FreePorts.find();
  }

  /** Adds {@code option=value} to a URL's query. */
  static String withOption(String url, String option, String value) {
    return url + (url.contains("?") ? "&" : "?") + option + "=" + value;
  }

  /** Runs SQL statements on a plain driver connection (outside any node). */
  static void execute(String url, String... sql) {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      for (String statement : sql) {
        s.execute(statement);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not run " + String.join("; ", sql), e);
    }
  }

  /** The first column of the first row of {@code sql}, run on a plain driver connection. */
  static String queryOne(String url, String sql) {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement();
        java.sql.ResultSet rows = s.executeQuery(sql)) {
      if (!rows.next()) {
        throw new IllegalStateException("no row from " + sql);
      }
      return rows.getString(1);
    } catch (SQLException e) {
      throw new IllegalStateException("could not run " + sql, e);
    }
  }

  /**
   * The kit's backdoor: reads a key with a raw driver connection, owner and remaining TTL both
   * computed by the database server.
   */
  static KeyInspector inspector(String url, String table) {
    try {
      Connection c = DriverManager.getConnection(url);
      Dialect d =
          io.redlock.jdbc.internal.LockTable.dialectFor(c.getMetaData().getDatabaseProductName());
      String sql = d.inspect(new TableName(table));
      return new KeyInspector() {
        @Override
        public Optional<KeyState> inspect(String key) {
          try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setBytes(
                1,
                io.redlock.sql.internal.KeyCodec.hash(
                    io.redlock.sql.internal.KeyCodec.encode(key)));
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                return Optional.empty();
              }
              String owner = io.redlock.sql.internal.KeyCodec.decode(rs.getBytes(1));
              return Optional.of(new KeyState(owner, Duration.ofNanos(rs.getLong(2) * 1000)));
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
            // closing a test connection
          }
        }
      };
    } catch (SQLException e) {
      throw new IllegalStateException("backdoor connection failed", e);
    }
  }
}
