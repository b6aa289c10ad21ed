package io.redlock.redis.internal;

import redis.clients.jedis.args.Rawable;
import redis.clients.jedis.util.SafeEncoder;

/**
 * The last few strings this thread encoded as command arguments. The engine passes the same key and
 * token to every node of one fan-out, from one thread, so each is encoded once per fan-out instead
 * of once per node: on five nodes that was a fifth of a lock cycle's garbage. Confined to its
 * thread; the cached bytes are never written to, only copied into a connection's output buffer.
 */
final class ArgumentCache {
  private static final int SIZE = 4;
  private static final ThreadLocal<ArgumentCache> CACHE =
      ThreadLocal.withInitial(ArgumentCache::new);

  private final String[] prefixes = new String[SIZE];
  private final String[] strings = new String[SIZE];
  private final Rawable[] encoded = new Rawable[SIZE];
  private int next;

  private ArgumentCache() {}

  /** {@code prefix + s} encoded as UTF-8 bytes, from this thread's cache when possible. */
  static Rawable encode(String prefix, String s) {
    return CACHE.get().lookup(prefix, s);
  }

  private Rawable lookup(String prefix, String s) {
    for (int i = 0; i < SIZE; i++) {
      // the prefix is one node's constant (often the same "" everywhere): identity suffices
      if (prefixes[i] == prefix && s.equals(strings[i])) {
        return encoded[i];
      }
    }
    Rawable raw = new Bytes(SafeEncoder.encode(prefix.isEmpty() ? s : prefix + s));
    prefixes[next] = prefix;
    strings[next] = s;
    encoded[next] = raw;
    next = (next + 1) % SIZE;
    return raw;
  }

  /**
   * A command argument already in bytes. Jedis copies a byte[] argument and encodes a String one
   * into a fresh array that it copies again; a Rawable goes through as it is.
   */
  record Bytes(byte[] raw) implements Rawable {
    @Override
    public byte[] getRaw() {
      return raw;
    }
  }
}
