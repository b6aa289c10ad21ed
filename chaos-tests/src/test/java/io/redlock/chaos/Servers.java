package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServer;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/** What the scenarios share about their servers and results. */
final class Servers {
  private Servers() {}

  /** Lock nodes with {@code pause/kill/restart}: always local processes. */
  static RedisServer.Builder redisNode() {
    return RedisServer.builder().faultInjection();
  }

  /** The counter store: a separate Redis server that is not a lock node. */
  static RedisServer counterStore() {
    return RedisServer.builder().faultInjection().start();
  }

  /** What C5 looks at: every key of each Redis node and the live rows of each PostgreSQL node. */
  static Supplier<Map<String, List<String>>> snapshot(
      List<RedisServer> redis, List<PostgresServer> postgres) {
    return () -> {
      Map<String, List<String>> out = new LinkedHashMap<>();
      for (RedisServer r : redis) {
        out.put("redis " + r.address(), Stores.redisKeys(r.uri(), 1000));
      }
      for (PostgresServer p : postgres) {
        try {
          out.put("postgres :" + p.port(), Stores.liveSqlRows(p.jdbcUrl()));
        } catch (SQLException e) {
          throw new IllegalStateException("cannot read the lock table of " + p, e);
        }
      }
      return out;
    };
  }

  /** Asserts that every check passed or did not apply. */
  static void assertNoFailure(List<CheckResult> checks) {
    for (CheckResult c : checks) {
      assertThat(c.failed()).as("%s", c).isFalse();
    }
  }
}
