package io.redlock.shedlock;

import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServers;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;

/** ShedLock's provider contract on the standard mixed quorum: 3 Redis + 2 PostgreSQL. */
@DisplayName("RedlockLockProvider on 3 Redis + 2 PostgreSQL")
class OnRedisAndPostgresTest extends LockProviderContract {
  private static RedisServers redis;
  private static PostgresServer pg1;
  private static PostgresServer pg2;

  @BeforeAll
  static void startServers() {
    redis = RedisServers.start(3);
    pg1 = PostgresServer.startLocal();
    pg2 = PostgresServer.startLocal();
  }

  @AfterAll
  static void stopServers() {
    for (AutoCloseable c : new AutoCloseable[] {pg2, pg1, redis}) {
      if (c != null) {
        try {
          c.close();
        } catch (Exception e) {
          // keep closing the others
        }
      }
    }
  }

  @Override
  List<String> nodeUris() {
    List<String> uris = new ArrayList<>(redis.uris());
    uris.add(pg1.jdbcUrl() + "&redlock.createTable=true");
    uris.add(pg2.jdbcUrl() + "&redlock.createTable=true");
    return uris;
  }
}
