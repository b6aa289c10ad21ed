package io.redlock.testservers;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("MariaDbServer")
class MariaDbServerTest {

  @Test
  @DisplayName("starts local servers on distinct free ports and stops, kills and restarts them")
  void startsStopsAndRestarts() {
    try (MariaDbServer a = MariaDbServer.startLocal();
        MariaDbServer b = MariaDbServer.startLocal()) {
      assertThat(a.port()).isNotEqualTo(b.port());
      assertThat(a.jdbcUrl())
          .isEqualTo(
              "jdbc:mariadb://127.0.0.1:"
                  + a.port()
                  + "/redlock?user=redlock&password="
                  + MariaDbServer.PASSWORD);
      assertThat(a.adminJdbcUrl()).contains("user=root");
      assertThat(PostgresServerSupport.accepts(a.port())).isTrue();

      a.kill();
      assertThat(a.isRunning()).isFalse();
      assertThat(PostgresServerSupport.accepts(a.port())).isFalse();
      assertThat(PostgresServerSupport.accepts(b.port())).isTrue();

      a.restart();
      assertThat(PostgresServerSupport.accepts(a.port())).isTrue();

      b.stop();
      assertThat(b.isRunning()).isFalse();
      assertThat(PostgresServerSupport.accepts(b.port())).isFalse();
    }
  }
}
