package io.redlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.ReleaseSubscription;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * PostgreSQL release notifications beyond the compatibility kit's rules: what a listener hears when
 * its LISTEN connection is killed, and which nodes declare notifications.
 */
@DisplayName("PostgreSQL release notifications (LISTEN/NOTIFY)")
class PgReleaseNotificationsTest {
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofSeconds(15);

  @Test
  @DisplayName("a killed LISTEN connection is replaced; listeners are called, then hear releases")
  void listenerSurvivesTerminatedConnection() throws Exception {
    String url = TestDatabases.postgres().jdbcUrl();
    String table = TestDatabases.uniqueTable("notify");
    try (JdbcLockNode listening =
            JdbcLockNode.builder(url + "&redlock.releaseNotifications=true")
                .table(table)
                .createTable(true)
                .build();
        JdbcLockNode releasing =
            JdbcLockNode.builder(url)
                .table(table)
                .createTable(true)
                .releaseNotifications(true)
                .build();
        Connection admin = DriverManager.getConnection(url)) {
      assertThat(listening.capabilities().releaseNotifications()).isTrue();
      Semaphore heard = new Semaphore(0);
      ReleaseSubscription subscription = listening.onRelease("k", heard::release);
      try {
        // the first (re)subscription calls every listener: it may have missed releases
        assertThat(heard.tryAcquire(10, TimeUnit.SECONDS)).as("called once listening").isTrue();
        assertThat(releaseHeard(releasing, heard)).as("a release before the kill").isTrue();

        int killed = 0;
        try (Statement s = admin.createStatement();
            ResultSet rs =
                s.executeQuery(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        + " WHERE application_name = 'redlock-release-listener'"
                        + " AND query ILIKE 'LISTEN%'")) {
          while (rs.next()) {
            killed++;
          }
        }
        assertThat(killed).as("LISTEN sessions terminated").isPositive();
        assertThat(heard.tryAcquire(10, TimeUnit.SECONDS))
            .as("listeners are called again once listening again")
            .isTrue();
        assertThat(releaseHeard(releasing, heard)).as("a release after the kill").isTrue();
      } finally {
        subscription.close();
      }
      heard.drainPermits();
      assertThat(releasing.tryAcquire("k", "after-close", TTL).await(WAIT).acquired()).isTrue();
      assertThat(releasing.release("k", "after-close").await(WAIT)).isTrue();
      assertThat(heard.tryAcquire(500, TimeUnit.MILLISECONDS))
          .as("a closed subscription hears nothing")
          .isFalse();
    }
  }

  /** Acquires and releases "k" through {@code node}; true if the listener heard it in time. */
  private static boolean releaseHeard(JdbcLockNode node, Semaphore heard) throws Exception {
    for (int attempt = 0; attempt < 20; attempt++) {
      heard.drainPermits();
      String token = "t" + attempt;
      assertThat(node.tryAcquire("k", token, TTL).await(WAIT).acquired()).isTrue();
      assertThat(node.release("k", token).await(WAIT)).isTrue();
      if (heard.tryAcquire(1, TimeUnit.SECONDS)) {
        return true;
      }
    }
    return false;
  }

  @Test
  @DisplayName("only PostgreSQL nodes with the option on declare release notifications")
  void declaredWhereOn() {
    String url = TestDatabases.postgres().jdbcUrl();
    try (JdbcLockNode plain = JdbcLockNode.builder(url).build();
        JdbcLockNode sqlite =
            JdbcLockNode.builder(TestDatabases.sqliteUrl("notify"))
                .releaseNotifications(true)
                .build();
        JdbcLockNode h2 = JdbcLockNode.builder(TestDatabases.h2Url("notify")).build()) {
      assertThat(plain.capabilities().releaseNotifications()).isFalse();
      assertThat(sqlite.capabilities().releaseNotifications()).isFalse();
      assertThat(h2.capabilities().releaseNotifications()).isFalse();
    }
  }

  @Test
  @DisplayName("by default a PostgreSQL release sends no notification (no commit serialisation)")
  void offByDefault() throws Exception {
    String url = TestDatabases.postgres().jdbcUrl();
    String table = TestDatabases.uniqueTable("quiet");
    try (JdbcLockNode node = JdbcLockNode.builder(url).table(table).createTable(true).build();
        Connection listener = DriverManager.getConnection(url)) {
      try (Statement s = listener.createStatement()) {
        s.execute("LISTEN \"redlock:" + table + "\"");
      }
      org.postgresql.PGConnection pg = listener.unwrap(org.postgresql.PGConnection.class);
      for (int i = 0; i < 3; i++) {
        assertThat(node.tryAcquire("k", "t" + i, TTL).await(WAIT).acquired()).isTrue();
        assertThat(node.release("k", "t" + i).await(WAIT)).isTrue();
      }
      org.postgresql.PGNotification[] heard = pg.getNotifications(500);
      assertThat(heard == null ? 0 : heard.length).isZero();

      // the same statements with the option on do notify this plain listener
      try (JdbcLockNode notifying =
          JdbcLockNode.builder(url).table(table).releaseNotifications(true).build()) {
        assertThat(notifying.tryAcquire("k", "on", TTL).await(WAIT).acquired()).isTrue();
        assertThat(notifying.release("k", "on").await(WAIT)).isTrue();
      }
      heard = pg.getNotifications(5_000);
      assertThat(heard).isNotNull();
      assertThat(heard[0].getName()).isEqualTo("redlock:" + table);
      assertThat(heard[0].getParameter()).hasSize(64).matches("[0-9a-f]+");
    }
  }
}
