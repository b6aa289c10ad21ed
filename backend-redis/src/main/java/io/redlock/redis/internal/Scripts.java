package io.redlock.redis.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** The Lua scripts of the canonical Redlock algorithm, and their SHA-1 digests for EVALSHA. */
final class Scripts {
  /** Compare-and-delete, exactly as the algorithm's description gives it. */
  static final String RELEASE =
      "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1])"
          + " else return 0 end";

  /** Compare-and-extend: the same with PEXPIRE, ARGV[2] the new TTL in milliseconds. */
  static final String EXTEND =
      "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return"
          + " redis.call(\"pexpire\",KEYS[1],ARGV[2]) else return 0 end";

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
