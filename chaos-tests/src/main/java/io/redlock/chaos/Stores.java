package io.redlock.chaos;

import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/** Reads the stores directly, bypassing the library: for C2's counters and C5's hygiene. */
public final class Stores {
  private Stores() {}

  /**
   * Every key of a Redis server ({@code SCAN}, which skips keys whose expiry has passed), at most
   * {@code limit}.
   */
  public static List<String> redisKeys(String uri, int limit) {
    List<String> keys = new ArrayList<>();
    try (Jedis jedis = new Jedis(URI.create(uri))) {
      String cursor = ScanParams.SCAN_POINTER_START;
      ScanParams params = new ScanParams().count(1000);
      do {
        ScanResult<String> page = jedis.scan(cursor, params);
        keys.addAll(page.getResult());
        cursor = page.getCursor();
      } while (!cursor.equals(ScanParams.SCAN_POINTER_START) && keys.size() < limit);
    }
    return keys;
  }

  /** The counters of every resource that has one, keyed by resource. */
  public static java.util.Map<String, Long> counters(String uri) {
    java.util.Map<String, Long> out = new java.util.TreeMap<>();
    try (Jedis jedis = new Jedis(URI.create(uri))) {
      String cursor = ScanParams.SCAN_POINTER_START;
      ScanParams params = new ScanParams().match("counter:*").count(1000);
      do {
        ScanResult<String> page = jedis.scan(cursor, params);
        for (String key : page.getResult()) {
          out.put(key.substring("counter:".length()), Long.parseLong(jedis.get(key)));
        }
        cursor = page.getCursor();
      } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
    }
    return out;
  }

  /**
   * The keys of live rows (not expired by the database's clock, hence not released either) in a SQL
   * lock table of the JDBC backend ({@code redlock_locks}: key_hash, lock_key, token, expires_at,
   * fence). A released fenced row stays, expired and without token: not live.
   */
  public static List<String> liveSqlRows(String jdbcUrl) throws SQLException {
    List<String> keys = new ArrayList<>();
    try (Connection c = DriverManager.getConnection(jdbcUrl);
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT lock_key FROM redlock_locks WHERE expires_at > clock_timestamp()"
                    + " ORDER BY lock_key LIMIT 1000");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        keys.add(rs.getString(1));
      }
    }
    return keys;
  }
}
