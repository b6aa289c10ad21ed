package io.redlock.redis;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** The Lua scripts of the canonical Redlock algorithm, and their SHA-1 digests for EVALSHA. */
final class Scripts {
  /**
   * Compare-and-delete as the algorithm's description gives it, and when the key was deleted, a
   * {@code PUBLISH} of the key on the release channel ARGV[2] (for waiters that subscribe; with no
   * subscriber it costs next to nothing). {@code pcall}: a user whose ACL forbids the channel still
   * releases, only without the notification.
   */
  static final String RELEASE =
      "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n"
          + "  redis.call(\"del\",KEYS[1])\n"
          + "  redis.pcall(\"publish\",ARGV[2],KEYS[1])\n"
          + "  return 1\n"
          + "else return 0 end";

  /** Compare-and-extend: the same with PEXPIRE, ARGV[2] the new TTL in milliseconds. */
  static final String EXTEND =
      "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return"
          + " redis.call(\"pexpire\",KEYS[1],ARGV[2]) else return 0 end";

  /**
   * Fenced acquire: {@code SET KEYS[1] ARGV[1] NX PX ARGV[2]}, exactly as the plain acquire, and if
   * it set the key, in the same atomic step, the counter in KEYS[2] (no expiry) becomes {@code
   * max(counter + 1, server time in µs)} and is returned as a string (nil if not acquired).
   *
   * <p>The time floor is what keeps the counter from going backwards when Redis loses it (a restart
   * without persistence, eviction): a counter starts again above every value handed out before, as
   * long as the server's clock did not go back and no value was raised past it. Numbers stay
   * strings (compared by length, then text) because Lua numbers are doubles.
   */
  static final String ACQUIRE_FENCED =
      "if redis.replicate_commands then redis.replicate_commands() end\n"
          + "if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end\n"
          + "redis.call('incr', KEYS[2])\n"
          + "local c = redis.call('get', KEYS[2])\n"
          + "local t = redis.call('time')\n"
          + "local now = t[1] .. string.format('%06d', tonumber(t[2]))\n"
          + "if string.sub(c, 1, 1) == '-' or #c < #now or (#c == #now and c < now) then\n"
          + "  redis.call('set', KEYS[2], now)\n"
          + "  c = now\n"
          + "end\n"
          + "return c";

  /**
   * Fence write-back: if KEYS[1] holds ARGV[1] (an expired key reads as absent), raises the counter
   * in KEYS[2] to at least ARGV[2] and answers 1; else answers 0. Neither the lock key nor its
   * expiry changes.
   */
  static final String RAISE_FENCE =
      "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
          + "local c = redis.call('get', KEYS[2])\n"
          + "local v = ARGV[2]\n"
          + "if (not c) or string.sub(c, 1, 1) == '-' or #c < #v or (#c == #v and c < v) then\n"
          + "  redis.call('set', KEYS[2], v)\n"
          + "end\n"
          + "return 1";

  static final String ACQUIRE_FENCED_SHA = sha1(ACQUIRE_FENCED);
  static final String RAISE_FENCE_SHA = sha1(RAISE_FENCE);

  static final String RELEASE_SHA = sha1(RELEASE);
  static final String EXTEND_SHA = sha1(EXTEND);

  private Scripts() {}

  static String sha1(String script) {
    try {
      MessageDigest digest = MessageDigest.getInstance("SHA-1");
      return HexFormat.of().formatHex(digest.digest(script.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 is missing from this JVM", e);
    }
  }
}
