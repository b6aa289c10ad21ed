package io.redlock.sql.internal;

import java.io.ByteArrayOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * How keys and tokens are stored. Strings become bytes in WTF-8: plain UTF-8 for every well-formed
 * string, and lossless for lone surrogates too, so any Java string round-trips exactly (UTF-8 via
 * {@code String.getBytes} would turn them into '?' and make distinct tokens equal). Binary columns
 * also avoid collations that ignore case or trailing spaces, and NUL characters that PostgreSQL
 * text refuses. The primary key is the SHA-256 of the key's bytes: 32 bytes whatever the key's
 * length, well inside every database's index limit.
 */
public final class KeyCodec {
  /** The longest key or token accepted, in bytes of WTF-8 (at least 1 KiB of any content). */
  public static final int MAX_BYTES = 16 * 1024;

  private KeyCodec() {}

  /** The WTF-8 bytes of {@code s}. */
  public static byte[] encode(String s) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(s.length() + 8);
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i); // a lone surrogate comes back as itself
      i += Character.charCount(cp);
      if (cp < 0x80) {
        out.write(cp);
      } else if (cp < 0x800) {
        out.write(0xC0 | (cp >> 6));
        out.write(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        out.write(0xE0 | (cp >> 12));
        out.write(0x80 | ((cp >> 6) & 0x3F));
        out.write(0x80 | (cp & 0x3F));
      } else {
        out.write(0xF0 | (cp >> 18));
        out.write(0x80 | ((cp >> 12) & 0x3F));
        out.write(0x80 | ((cp >> 6) & 0x3F));
        out.write(0x80 | (cp & 0x3F));
      }
    }
    return out.toByteArray();
  }

  /** The string whose WTF-8 bytes these are. */
  public static String decode(byte[] bytes) {
    StringBuilder sb = new StringBuilder(bytes.length);
    for (int i = 0; i < bytes.length; ) {
      int b = bytes[i] & 0xFF;
      int cp;
      int extra;
      if (b < 0x80) {
        cp = b;
        extra = 0;
      } else if (b >= 0xF0) {
        cp = b & 0x07;
        extra = 3;
      } else if (b >= 0xE0) {
        cp = b & 0x0F;
        extra = 2;
      } else {
        cp = b & 0x1F;
        extra = 1;
      }
      if (i + extra > bytes.length - 1) {
        throw new IllegalArgumentException("truncated WTF-8 sequence at byte " + i);
      }
      for (int k = 1; k <= extra; k++) {
        cp = (cp << 6) | (bytes[i + k] & 0x3F);
      }
      i += extra + 1;
      sb.appendCodePoint(cp);
    }
    return sb.toString();
  }

  /** The primary key of {@code key}: SHA-256 of its bytes. */
  public static byte[] hash(byte[] keyBytes) {
    return SHA_256.get().digest(keyBytes); // digest() resets it for the next call
  }

  /**
   * One digest per thread: looking one up through the security providers cost more than hashing.
   */
  private static final ThreadLocal<MessageDigest> SHA_256 =
      ThreadLocal.withInitial(
          () -> {
            try {
              return MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
              throw new IllegalStateException("every Java platform has SHA-256", e);
            }
          });

  /**
   * The key as readable text for the {@code lock_key} column, which is for people only: NUL and
   * lone surrogates, which some databases cannot store as text, become U+FFFD.
   */
  public static String display(String key) {
    if (storableAsText(key)) {
      return key;
    }
    StringBuilder sb = new StringBuilder(key.length());
    for (int i = 0; i < key.length(); ) {
      int cp = key.codePointAt(i);
      i += Character.charCount(cp);
      boolean unstorable =
          cp == 0 || (cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE);
      sb.appendCodePoint(unstorable ? 0xFFFD : cp);
    }
    return sb.toString();
  }

  /** True if no character of {@code key} needs replacing by {@link #display}. */
  private static boolean storableAsText(String key) {
    for (int i = 0; i < key.length(); i++) {
      char ch = key.charAt(i);
      if (ch == 0) {
        return false;
      }
      if (Character.isSurrogate(ch)) {
        if (Character.isHighSurrogate(ch)
            && i + 1 < key.length()
            && Character.isLowSurrogate(key.charAt(i + 1))) {
          i++; // a valid pair is one storable code point
        } else {
          return false;
        }
      }
    }
    return true;
  }

  /** Rejects a key or token too long to store, naming which and the limit. */
  public static byte[] requireStorable(String what, String value) {
    byte[] bytes = encode(value);
    if (bytes.length > MAX_BYTES) {
      throw new IllegalArgumentException(
          what
              + " is "
              + bytes.length
              + " bytes in UTF-8; a JDBC lock node accepts at most "
              + MAX_BYTES
              + " bytes: use a shorter "
              + what);
    }
    return bytes;
  }
}
