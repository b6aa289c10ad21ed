package io.redlock.jdbc.internal;

import static io.redlock.jdbc.internal.Waits.awaitInTask;
import static io.redlock.jdbc.internal.Waits.within;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.jdbc.TestDatabases;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The watchdog that keeps the query timeout of PostgreSQL lock statements, on a real server. */
class StatementWatchdogTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static Connection connect() throws SQLException {
    return DriverManager.getConnection(TestDatabases.postgres().jdbcUrl());
  }

  /** Runs a query of one integer on this thread under the watchdog's eye. */
  private static int watched(StatementWatchdog dog, Connection c, String sql, long timeoutNanos)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      dog.watch(ps, timeoutNanos);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      } finally {
        dog.done();
      }
    }
  }

  @Test
  @DisplayName("a statement still running at its timeout is cancelled on the server")
  void cancelsOverdue() throws Exception {
    StatementWatchdog dog = new StatementWatchdog(20 * MS, 1_000 * MS);
    try (Connection c = connect()) {
      long start = System.nanoTime();
      assertThatThrownBy(() -> watched(dog, c, "SELECT 1 FROM pg_sleep(30)", 300 * MS))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("57014"));
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
      assertThat(dog.cancelled()).isEqualTo(1);
      // the connection stays usable, and its next statement is not cancelled
      assertThat(watched(dog, c, "SELECT 7", 5_000 * MS)).isEqualTo(7);
    }
  }

  @Test
  @DisplayName("statements that end in time are never cancelled, nor their successors")
  void leavesTimelyStatementsAlone() throws Exception {
    // a deadline in the past as soon as the statement is sent: the watchdog finds many overdue
    // slots whose statements have ended (or are ending), and cancelling those must do nothing
    StatementWatchdog dog = new StatementWatchdog(1 * MS, 1_000 * MS);
    try (Connection c = connect()) {
      int done = 0;
      for (int i = 0; i < 300; i++) {
        try {
          watched(dog, c, "SELECT 1", 0);
          done++;
        } catch (SQLException e) {
          assertThat(e.getSQLState()).isEqualTo("57014"); // cancelled while it ran: allowed
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT 2");
            ResultSet rs = ps.executeQuery()) { // not watched: must never be cancelled
          rs.next();
          assertThat(rs.getInt(1)).isEqualTo(2);
        }
      }
      assertThat(done).isPositive();
    }
    StatementWatchdog patient = new StatementWatchdog(5 * MS, 1_000 * MS);
    try (Connection c = connect()) {
      for (int i = 0; i < 100; i++) {
        assertThat(watched(patient, c, "SELECT 3", 10_000 * MS)).isEqualTo(3);
      }
      assertThat(patient.cancelled()).isZero();
    }
  }

  @Test
  @DisplayName("its thread stops after a while without statements, and starts again when needed")
  void stopsWhenIdle() throws Exception {
    StatementWatchdog dog = new StatementWatchdog(10 * MS, 1_000 * MS);
    try (Connection c = connect()) {
      assertThat(dog.running()).isFalse();
      assertThat(watched(dog, c, "SELECT 1", 5_000 * MS)).isEqualTo(1);
      assertThat(dog.running()).isTrue(); // started by the watch, ends 1 s after the last one
      assertThat(within(Duration.ofSeconds(20), () -> !dog.running())).isTrue();
      assertThatThrownBy(() -> watched(dog, c, "SELECT 1 FROM pg_sleep(30)", 300 * MS))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("57014"));
      assertThat(dog.cancelled()).isEqualTo(1);
    }
  }

  @Test
  @DisplayName("it forgets the threads that ended")
  void forgetsEndedThreads() throws Exception {
    StatementWatchdog dog = new StatementWatchdog(10 * MS, 5_000 * MS);
    try (Connection c = connect()) {
      SQLException[] failure = new SQLException[1];
      CountDownLatch watchedOnce = new CountDownLatch(1);
      CountDownLatch mayEnd = new CountDownLatch(1);
      Thread t =
          new Thread(
              () -> {
                try {
                  watched(dog, c, "SELECT 1", 5_000 * MS);
                } catch (SQLException e) {
                  failure[0] = e;
                }
                watchedOnce.countDown();
                awaitInTask(mayEnd);
              });
      t.start();
      assertThat(watchedOnce.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat((Object) failure[0]).isNull();
      assertThat(dog.slots()).isEqualTo(1); // kept while its thread lives
      mayEnd.countDown();
      t.join(10_000);
      // the sweep drops a slot once its thread ended; keep the watchdog busy meanwhile
      try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_sleep(0.5)")) {
        dog.watch(ps, 5_000 * MS);
        ps.executeQuery().close();
        dog.done();
      }
      assertThat(within(Duration.ofSeconds(5), () -> dog.slots() == 1)).isTrue(); // this thread's
    }
  }
}
