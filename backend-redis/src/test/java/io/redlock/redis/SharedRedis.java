package io.redlock.redis;

import io.redlock.testservers.RedisServer;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;

/**
 * One Redis server shared by the test classes of this module (started on first use, stopped at JVM
 * exit by its process's shutdown hook), and plain Jedis clients to look behind the node's back.
 */
final class SharedRedis {
  private static RedisServer server;

  private SharedRedis() {}

  static synchronized RedisServer server() {
    if (server == null) {
      server = RedisServer.start();
    }
    return server;
  }

  /** A plain client on {@code redis}, database {@code db}: the view of any other Redis client. */
  static Jedis plainClient(RedisServer redis, int db) {
    DefaultJedisClientConfig.Builder config =
        DefaultJedisClientConfig.builder().autoNegotiateProtocol(false).database(db);
    redis.password().ifPresent(config::password);
    return new Jedis(redis.host(), redis.port(), config.build());
  }

  static Jedis plainClient() {
    return plainClient(server(), 0);
  }
}
