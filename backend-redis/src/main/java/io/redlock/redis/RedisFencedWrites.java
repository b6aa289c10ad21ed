package io.redlock.redis;

import io.redlock.StaleFencingTokenException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.function.UnaryOperator;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.JedisCommands;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * Fencing on the protected resource's side when its data lives in Redis (the application's own, not
 * a lock node): writes carrying a lease's {@link io.redlock.Lease#fencingToken() fencing token},
 * applied only if the token is at least the highest the key has seen (an equal one again, as with
 * {@link io.redlock.FencingGuard}). Check, write and record run in one Lua script.
 *
 * <pre>{@code
 * RedisFencedWrites fenced = RedisFencedWrites.over(redisClient); // or a RedisClusterClient, a Jedis
 * try (Lease lease = redlock.acquire("invoice-42", ttl, maxWait)) {
 *   fenced.set("invoice:42", json, lease.fencingToken()); // StaleFencingTokenException if stale
 * }
 * }</pre>
 *
 * <p>The data key is written as usual (a string, or a hash with {@link #hset}). The highest token
 * seen is kept, without expiry, in a companion key in the data key's cluster slot ({@link
 * #fenceKey(String)}); delete it only once no lease on the key can still write. Thread-safe if the
 * client is; messages never contain values.
 */
public final class RedisFencedWrites {

  /**
   * KEYS[1] the data key, KEYS[2] its fence key, ARGV[1] the token: returns the higher token seen
   * (nothing written), else the data write follows, then the fence. Tokens are compared as decimal
   * strings in two halves: Lua numbers are doubles, exact only up to 2^53.
   */
  private static final String PROLOGUE =
      """
      local function below(a, b)
        if #a ~= #b then return #a < #b end
        local cut = #a - 9
        if cut > 0 then
          local ha, hb = tonumber(string.sub(a, 1, cut)), tonumber(string.sub(b, 1, cut))
          if ha ~= hb then return ha < hb end
          return tonumber(string.sub(a, cut + 1)) < tonumber(string.sub(b, cut + 1))
        end
        return tonumber(a) < tonumber(b)
      end
      local highest = redis.call('GET', KEYS[2])
      if highest then
        if #highest > 19 or not string.match(highest, '^[1-9]%d*$') then
          return redis.error_reply('ERR fence key ' .. KEYS[2]
            .. ' does not hold a fencing token; it belongs to RedisFencedWrites, do not reuse it')
        end
        if below(ARGV[1], highest) then return highest end
      end
      """;

  /** ARGV[2] the value, ARGV[3] the expiry in ms or '' for none. */
  private static final Script SET =
      new Script(
          PROLOGUE
              + """
              if ARGV[3] == '' then
                redis.call('SET', KEYS[1], ARGV[2])
              else
                redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
              end
              redis.call('SET', KEYS[2], ARGV[1])
              return ARGV[1]
              """);

  /** ARGV[2..] field, value, field, value, ... (one HSET per pair: no unpack() stack limit). */
  private static final Script HSET =
      new Script(
          PROLOGUE
              + """
              for i = 2, #ARGV, 2 do
                redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
              end
              redis.call('SET', KEYS[2], ARGV[1])
              return ARGV[1]
              """);

  private static final String FENCE_PREFIX = "fence:{";

  private final JedisCommands redis;
  private final UnaryOperator<String> fenceKeys;

  private RedisFencedWrites(JedisCommands redis, UnaryOperator<String> fenceKeys) {
    this.redis = redis;
    this.fenceKeys = fenceKeys;
  }

  /**
   * Fenced writes through {@code redis}, which the caller keeps owning: any {@link UnifiedJedis}
   * ({@code RedisClient}, {@code RedisClusterClient}...) or one {@link Jedis} (one thread at a
   * time).
   */
  public static RedisFencedWrites over(JedisCommands redis) {
    return new RedisFencedWrites(
        Objects.requireNonNull(redis, "redis must not be null"), RedisFencedWrites::fenceKey);
  }

  /**
   * The same writes with fence keys named by {@code naming} (data key in, fence key out); on Redis
   * Cluster it must hash to the data key's slot, and differ from every other key.
   */
  public RedisFencedWrites withFenceKeys(UnaryOperator<String> naming) {
    Objects.requireNonNull(naming, "naming must not be null");
    return new RedisFencedWrites(redis, naming);
  }

  /**
   * The default fence key of {@code key}, in its cluster slot: <code>fence:&#123;key&#125;</code>,
   * or <code>fence:&#123;tag&#125;:key</code> for a key with a hash tag. A key with a <code>
   * '&#125;'</code> but no hash tag needs {@link #withFenceKeys}.
   */
  public static String fenceKey(String key) {
    requireKey(key);
    if (key.startsWith(FENCE_PREFIX)) {
      throw new IllegalArgumentException(
          "key '"
              + key
              + "' starts with '"
              + FENCE_PREFIX
              + "', the prefix of the fence keys RedisFencedWrites derives: pass the data key,"
              + " or name fence keys yourself with withFenceKeys(...)");
    }
    int open = key.indexOf('{');
    if (open >= 0) {
      int close = key.indexOf('}', open + 1);
      if (close > open + 1) {
        return FENCE_PREFIX + key.substring(open + 1, close) + "}:" + key;
      }
    }
    if (key.indexOf('}') >= 0) {
      throw new IllegalArgumentException(
          "key '"
              + key
              + "' contains '}' but no hash tag, so no derived fence key is sure to share its"
              + " Redis Cluster slot: give the key a hash tag such as {id}, or name fence keys"
              + " yourself with withFenceKeys(...)");
    }
    return FENCE_PREFIX + key + "}";
  }

  /** Sets {@code key} to {@code value}; false if a higher token was seen (nothing written). */
  public boolean trySet(String key, String value, long token) {
    return set(key, value, token, null, false);
  }

  /** As {@link #trySet(String, String, long)}, with an expiry (the fence key has none). */
  public boolean trySet(String key, String value, long token, Duration expiry) {
    return set(key, value, token, requireExpiry(expiry), false);
  }

  /** As {@link #trySet(String, String, long)}; a refusal is a StaleFencingTokenException. */
  public void set(String key, String value, long token) {
    set(key, value, token, null, true);
  }

  /** As {@link #set(String, String, long)}, with an expiry (the fence key has none). */
  public void set(String key, String value, long token, Duration expiry) {
    set(key, value, token, requireExpiry(expiry), true);
  }

  /** {@code HSET}s {@code fields}; false if a higher token was seen (nothing written). */
  public boolean tryHset(String key, Map<String, String> fields, long token) {
    return hset(key, fields, token, false);
  }

  /** As {@link #tryHset}; a refusal is a StaleFencingTokenException. */
  public void hset(String key, Map<String, String> fields, long token) {
    hset(key, fields, token, true);
  }

  /** The highest token accepted for {@code key} so far, or empty if none was. */
  public OptionalLong highestAccepted(String key) {
    String fenceKey = fenceKeyOf(key);
    String stored = redis.get(fenceKey);
    if (stored == null) {
      return OptionalLong.empty();
    }
    try {
      return OptionalLong.of(Long.parseLong(stored));
    } catch (NumberFormatException e) {
      throw new IllegalStateException(
          "fence key "
              + fenceKey
              + " does not hold a fencing token; it belongs to"
              + " RedisFencedWrites, do not reuse it",
          e);
    }
  }

  private boolean set(String key, String value, long token, Long expiryMs, boolean throwIfStale) {
    requireToken(token);
    if (value == null) {
      throw new IllegalArgumentException("value must not be null (an empty string is allowed)");
    }
    String fenceKey = fenceKeyOf(key);
    List<String> args = List.of(Long.toString(token), value, expiryMs == null ? "" : expiryMs + "");
    return outcome(key, token, run(SET, key, fenceKey, args), throwIfStale);
  }

  private boolean hset(String key, Map<String, String> fields, long token, boolean throwIfStale) {
    requireToken(token);
    if (fields == null || fields.isEmpty()) {
      throw new IllegalArgumentException("fields must name at least one field to set");
    }
    String fenceKey = fenceKeyOf(key);
    List<String> args = new ArrayList<>(1 + 2 * fields.size());
    args.add(Long.toString(token));
    fields.forEach(
        (field, value) -> {
          if (field == null || value == null) {
            throw new IllegalArgumentException(
                "fields must not contain null names or values (field " + field + ")");
          }
          args.add(field);
          args.add(value);
        });
    return outcome(key, token, run(HSET, key, fenceKey, args), throwIfStale);
  }

  private String fenceKeyOf(String key) {
    requireKey(key);
    String fenceKey = fenceKeys.apply(key);
    if (fenceKey == null || fenceKey.isEmpty() || fenceKey.equals(key)) {
      throw new IllegalArgumentException(
          "the fence key named for '" + key + "' must be non-empty and differ from the data key");
    }
    return fenceKey;
  }

  /** EVALSHA, and EVAL (which caches the script) when the server answers NOSCRIPT. */
  private Object run(Script script, String key, String fenceKey, List<String> args) {
    List<String> keys = List.of(key, fenceKey);
    try {
      return redis.evalsha(script.sha1, keys, args);
    } catch (JedisNoScriptException e) {
      return redis.eval(script.source, keys, args);
    }
  }

  private static boolean outcome(String key, long token, Object reply, boolean throwIfStale) {
    String text =
        reply instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : reply + "";
    long highest = Long.parseLong(text);
    if (highest == token) {
      return true;
    }
    if (throwIfStale) {
      throw new StaleFencingTokenException(key, token, highest);
    }
    return false;
  }

  private static void requireKey(String key) {
    if (key == null || key.isEmpty()) {
      throw new IllegalArgumentException("key must be a non-empty string");
    }
  }

  private static void requireToken(long token) {
    if (token <= 0) {
      throw new IllegalArgumentException(
          "a fencing token is positive, got " + token + "; pass lease.fencingToken()");
    }
  }

  private static Long requireExpiry(Duration expiry) {
    if (expiry == null || expiry.isNegative() || expiry.isZero()) {
      throw new IllegalArgumentException("expiry must be positive, got " + expiry);
    }
    long ms = expiry.toMillis();
    return expiry.equals(Duration.ofMillis(ms)) ? ms : ms + 1;
  }

  /** A Lua script with its SHA-1, as EVALSHA names it. */
  private record Script(String source, String sha1) {
    Script(String source) {
      this(source, Scripts.sha1(source));
    }
  }

  @Override
  public String toString() {
    return "RedisFencedWrites[" + redis.getClass().getSimpleName() + "]";
  }
}
