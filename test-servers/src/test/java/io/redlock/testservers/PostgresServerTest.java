package io.redlock.testservers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("PostgresServer")
class PostgresServerTest {

  @Test
  @DisplayName("starts local servers on distinct free ports and stops, crashes and restarts them")
  void startsStopsAndRestarts() {
    try (PostgresServer a = PostgresServer.startLocal();
        PostgresServer b = PostgresServer.startLocal()) {
      assertThat(a.port()).isNotEqualTo(b.port());
      assertThat(a.jdbcUrl())
          .startsWith("jdbc:postgresql://127.0.0.1:" + a.port() + "/postgres?")
          .contains("user=" + PostgresServer.USER);
      assertThat(PostgresServerSupport.accepts(a.port())).isTrue();
      assertThat(PostgresServerSupport.accepts(b.port())).isTrue();

      a.crash();
      assertThat(a.isRunning()).isFalse();
      assertThat(PostgresServerSupport.accepts(a.port())).isFalse();
      assertThat(PostgresServerSupport.accepts(b.port())).isTrue();

      a.restart();
      assertThat(a.isRunning()).isTrue();
      assertThat(PostgresServerSupport.accepts(a.port())).isTrue();

      a.kill();
      assertThat(a.isRunning()).isFalse();
      a.restart();
      assertThat(PostgresServerSupport.accepts(a.port())).isTrue();

      b.stop();
      assertThat(b.isRunning()).isFalse();
    }
  }

  @Test
  @DisplayName("close deletes the server's directory, data and log, unless told to keep it")
  void closeDeletesTheServersFiles() {
    java.nio.file.Path dir;
    try (PostgresServer server = PostgresServer.startLocal()) {
      dir = server.process.workDir();
      assertThat(dir.resolve("data").resolve("PG_VERSION")).exists();
      assertThat(dir.resolve("postgres.log")).exists();
    }
    assertThat(dir).doesNotExist();

    System.setProperty(Binaries.KEEP_FILES_PROPERTY, "true");
    try {
      try (PostgresServer server = PostgresServer.startLocal()) {
        dir = server.process.workDir();
      }
      assertThat(dir.resolve("data").resolve("PG_VERSION")).exists();
    } finally {
      System.clearProperty(Binaries.KEEP_FILES_PROPERTY);
    }
    Binaries.deleteScratchDir(dir);
    assertThat(dir).doesNotExist();
  }

  @Test
  @DisplayName("pause freezes the connections already open, resume thaws them")
  void pauseFreezesOpenConnections() throws Exception {
    try (PostgresServer server = PostgresServer.startLocal();
        java.sql.Connection c = java.sql.DriverManager.getConnection(server.jdbcUrl())) {
      c.setNetworkTimeout(Runnable::run, 500);
      try (java.sql.Statement s = c.createStatement()) {
        s.execute("SELECT 1");
      }
      server.pause();
      try (java.sql.Statement s = c.createStatement()) {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> s.execute("SELECT 1"))
            .as("a query on a connection opened before the pause")
            .isInstanceOf(java.sql.SQLException.class)
            .hasRootCauseInstanceOf(java.net.SocketTimeoutException.class);
      } finally {
        server.resume();
      }
      try (java.sql.Connection again = java.sql.DriverManager.getConnection(server.jdbcUrl());
          java.sql.Statement s = again.createStatement()) {
        s.execute("SELECT 1");
      }
    }
  }

  @Test
  @DisplayName("says how to get a local server when asked to control one it did not start")
  void externalServersCannotBeControlled() {
    try (PostgresServer local = PostgresServer.startLocal()) {
      local.close();
      assertThat(local.isRunning()).isFalse();
    }
    assertThatThrownBy(() -> PostgresServerSupport.requireBinary("no-such-binary-x", "install it"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no-such-binary-x")
        .hasMessageContaining("install it");
  }
}
