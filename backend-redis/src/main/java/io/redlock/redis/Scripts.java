package io.redlock.redis;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** The Lua scripts of the canonical Redlock algorithm, and their SHA-1 digests for EVALSHA. */
final class Scripts {
  /** Compare-and-delete, then a PUBLISH of the key on ARGV[2] (pcall: an ACL may forbid it). */
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
   * The plain acquire, then the counter in KEYS[2] becomes {@code max(counter + 1, server time in
   * µs)}: a lost counter starts again above the old values. Numbers stay strings (Lua has doubles).
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

  /** If KEYS[1] holds ARGV[1], raises the counter KEYS[2] to at least ARGV[2]: 1, else 0. */
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
