package io.redlock.tck;

/** Text helpers of the rules about keys and tokens (R6 to R8). */
final class Texts {

  private Texts() {}

  static String padTo(String start, String unit, int utf8Bytes) {
    StringBuilder b = new StringBuilder(start);
    int unitBytes = unit.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
    int bytes = start.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
    while (bytes + unitBytes <= utf8Bytes) {
      b.append(unit);
      bytes += unitBytes;
    }
    while (bytes < utf8Bytes) {
      b.append('.');
      bytes++;
    }
    return b.toString();
  }

  static String quoted(String s) {
    return s == null ? "null" : "\"" + s + "\"";
  }

  /** A string with invisible and combining characters spelled out, for messages. */
  static String visible(String s) {
    StringBuilder b = new StringBuilder("\"");
    s.codePoints()
        .forEach(
            cp -> {
              if (cp < 0x20 || cp == ' ' || cp > 0x7e) {
                b.append(String.format("\\u%04X", cp));
              } else {
                b.append((char) cp);
              }
            });
    return b.append('"').toString();
  }
}
