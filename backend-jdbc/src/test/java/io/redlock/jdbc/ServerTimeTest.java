package io.redlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code serverTime()} is a true instant whatever the session's time zone: each database's
 * connections are set to a zone 13 hours ahead of UTC (and one 11 hours behind), where a local
 * timestamp read as UTC, or a UTC timestamp read as local, would be off by whole hours. The servers
 * run on this machine, so their clocks are this machine's.
 */
@DisplayName("serverTime() on every database, with session time zones far from UTC")
class ServerTimeTest {
  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final Duration TOLERANCE = Duration.ofSeconds(2);

  /** Each database, with the statement that sets a session's time zone ({@code %s}: the zone). */
  enum Database {
    POSTGRESQL("SET TIME ZONE '%s'") {
      @Override
      String url() {
        return TestDatabases.postgres().jdbcUrl();
      }
    },
    MARIADB("SET time_zone = '%s'") {
      @Override
      String url() {
        // a node on a caller's DataSource requires affected-row counts from MariaDB
        return TestDatabases.withOption(
            TestDatabases.mariadb().jdbcUrl(), "useAffectedRows", "true");
      }
    },
    H2("SET TIME ZONE '%s'") {
      @Override
      String url() {
        return TestDatabases.h2Url("server-time");
      }
    },
    /** SQLite has no session time zone: {@code 'now'} is UTC. */
    SQLITE(null) {
      @Override
      String url() {
        return TestDatabases.sqliteUrl("server-time");
      }
    };

    final String setZone;

    Database(String setZone) {
      this.setZone = setZone;
    }

    abstract String url();
  }

  /** What a test does with a node whose sessions are in one time zone. */
  @FunctionalInterface
  private interface InZone {
    void check(JdbcLockNode node, String zone);
  }

  /** Runs {@code check} on a node of {@code db} in sessions at UTC+13, then at UTC-11. */
  private static void inFarZones(Database db, String tablePrefix, InZone check) {
    for (String zone : new String[] {"+13:00", "-11:00"}) {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(db.url());
      config.setMaximumPoolSize(2);
      if (db.setZone != null) {
        config.setConnectionInitSql(String.format(db.setZone, zone));
      }
      try (HikariDataSource pool = new HikariDataSource(config);
          JdbcLockNode node =
              JdbcLockNode.builder(pool)
                  .name(db + " at " + zone)
                  .table(TestDatabases.uniqueTable(tablePrefix))
                  .createTable(true)
                  .build()) {
        check.check(node, zone);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Database.class)
  @DisplayName("answers this machine's time in sessions at UTC+13 and UTC-11")
  void trueInstantInAnyZone(Database db) {
    inFarZones(
        db,
        "clock",
        (node, zone) -> {
          for (int i = 0; i < 3; i++) {
            Instant before = Instant.now();
            Instant server = node.serverTime().await(WAIT);
            Instant after = Instant.now();
            assertThat(server)
                .as(
                    "%s, session time zone %s: read between %s and %s here",
                    db, zone, before, after)
                .isBetween(before.minus(TOLERANCE), after.plus(TOLERANCE));
          }
        });
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Database.class)
  @DisplayName("a new key's fencing counter starts at the true time in µs in any session zone")
  void fenceFloorInAnyZone(Database db) {
    inFarZones(
        db,
        "floor",
        (node, zone) -> {
          Instant before = Instant.now();
          long fence =
              node.tryAcquireFenced("floor-key", "t", Duration.ofSeconds(30)).await(WAIT).fence();
          Instant after = Instant.now();
          // the floor of a counter that was never set is the server's time in µs since 1970
          Instant floor = Instant.EPOCH.plusNanos(fence * 1_000L);
          assertThat(floor)
              .as("%s, session time zone %s: counter %d", db, zone, fence)
              .isBetween(before.minus(TOLERANCE), after.plus(TOLERANCE));
        });
  }
}
