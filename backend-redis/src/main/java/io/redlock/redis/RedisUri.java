package io.redlock.redis;

import io.redlock.spi.NodeUri;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Reads a {@code redis://} or {@code rediss://} URI into a {@link RedisLockNode.Builder}. Every
 * error names the problem and the accepted values; none shows the password.
 */
final class RedisUri {
  /** The URI query options understood, as the error messages list them. */
  private static final String KNOWN_OPTIONS =
      "connectTimeout, database, keyPrefix, password, poolSize, socketTimeout, user, verifyHostname";

  private RedisUri() {}

  /**
   * Applies a {@code redis://[user[:password]@]host[:port][/database][?option=value&...]} URI
   * ({@code rediss://} for TLS). Options: see {@link RedisLockNode}.
   *
   * @throws IllegalArgumentException for a malformed URI or option, naming it
   */
  static void apply(String text, RedisLockNode.Builder b) {
    Objects.requireNonNull(text, "node URI must not be null");
    String shown = shown(text.strip());
    // checks the scheme and the port, naming the URI; its query options are applied below
    Map<String, String> options = NodeUri.parse(text.strip()).query();
    URI uri;
    try {
      uri = new URI(text.strip());
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException(
          "malformed Redis URI '"
              + shown
              + "': "
              + NodeUri.redact(e.getReason())
              + "; expected redis://[user:password@]host[:port][/database][?option=value]"
              + " (percent-encode special characters in the password)");
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("redis") && !scheme.equals("rediss")) {
      throw new IllegalArgumentException(
          "'"
              + shown
              + "' is not a Redis URI: the scheme must be redis:// or rediss:// (TLS), got '"
              + scheme
              + "'");
    }
    b.tls(scheme.equals("rediss"));
    if (uri.getHost() == null || uri.getHost().isEmpty()) {
      throw new IllegalArgumentException(
          "Redis URI '"
              + shown
              + "' has no host; expected redis://host:port, e.g. redis://127.0.0.1:6379"
              + " (percent-encode '@', ':' and '/' in a password: %40, %3A, %2F)");
    }
    if (contains(uri.getRawPath(), '@') || contains(uri.getRawFragment(), '@')) {
      // redis://user:pa/ss@host: the path would be a piece of the password, never to be shown
      throw new IllegalArgumentException(
          "Redis URI '"
              + shown
              + "' has a '@' after its host; percent-encode '/', '?', '#' and '@' in a password"
              + " (%2F, %3F, %23, %40)");
    }
    b.host(uri.getHost().replace("[", "").replace("]", ""));
    if (uri.getPort() != -1) {
      b.port(uri.getPort());
    }
    String userInfo = uri.getRawUserInfo();
    if (userInfo != null && !userInfo.isEmpty()) {
      int colon = userInfo.indexOf(':');
      String u = decode(colon < 0 ? userInfo : userInfo.substring(0, colon), shown);
      String p = colon < 0 ? null : decode(userInfo.substring(colon + 1), shown);
      if (colon < 0) {
        // ambiguous (a user or a password?): refuse rather than guess
        throw new IllegalArgumentException(
            "Redis URI '"
                + shown
                + "' has credentials without a colon; write redis://:password@host for a password"
                + " or redis://user:password@host for an ACL user");
      }
      b.user(u.isEmpty() ? null : u);
      b.password(p == null || p.isEmpty() ? null : p);
    }
    String path = uri.getRawPath();
    if (path != null && !path.isEmpty() && !path.equals("/")) {
      String db = path.substring(1);
      b.database(parseInt("database (the URI path)", db, shown));
    }
    for (Map.Entry<String, String> option : options.entrySet()) {
      applyOption(b, option.getKey(), option.getValue(), shown);
    }
  }

  private static boolean contains(String s, char c) {
    return s != null && s.indexOf(c) >= 0;
  }

  /** The URI for messages: passwords and any credentials without a colon hidden. */
  static String shown(String text) {
    return NodeUri.redactUri(text).replaceAll("//[^/@?#:]*@", "//***@");
  }

  private static void applyOption(
      RedisLockNode.Builder b, String name, String value, String shown) {
    switch (name) {
      case "user" -> b.user(value.isEmpty() ? null : value);
      case "password" -> b.password(value.isEmpty() ? null : value);
      case "database" -> b.database(parseInt(name, value, shown));
      case "connectTimeout" -> b.connectTimeout(parseDuration(name, value, shown));
      case "socketTimeout" -> b.socketTimeout(parseDuration(name, value, shown));
      case "poolSize" -> b.poolSize(parseInt(name, value, shown));
      case "keyPrefix" -> b.keyPrefix(value);
      case "verifyHostname" -> b.verifyHostname(parseBoolean(name, value, shown));
      default ->
          throw new IllegalArgumentException(
              "unknown option "
                  + (name.matches("[A-Za-z0-9_.-]+")
                      ? "'" + name + "'"
                      : "(not shown: it could be a piece of a password with an unencoded '?')")
                  + " in Redis URI '"
                  + shown
                  + "'; known options: "
                  + KNOWN_OPTIONS);
    }
  }

  private static String decode(String s, String shown) {
    try {
      return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      // URLDecoder's message quotes the text, a piece of the password: not passed on
      throw new IllegalArgumentException(
          "Redis URI '"
              + shown
              + "' has a '%' that does not start a %XX escape in its user info; write % as %25");
    }
  }

  private static int parseInt(String name, String value, String shown) {
    try {
      return Integer.parseInt(value.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          name + " must be a whole number, got '" + value + "' in '" + shown + "'");
    }
  }

  private static boolean parseBoolean(String name, String value, String shown) {
    return switch (value.strip().toLowerCase(Locale.ROOT)) {
      case "true", "yes", "1" -> true;
      case "false", "no", "0" -> false;
      default ->
          throw new IllegalArgumentException(
              name + " must be true or false, got '" + value + "' in '" + shown + "'");
    };
  }

  /** Parses {@code 500}, {@code 500ms}, {@code 2s}, {@code 1m} or ISO-8601 {@code PT2S}. */
  static Duration parseDuration(String name, String value, String shown) {
    String v = value.strip().toLowerCase(Locale.ROOT);
    try {
      if (v.startsWith("pt") || v.startsWith("p")) {
        return Duration.parse(v.toUpperCase(Locale.ROOT));
      }
      if (v.endsWith("ms")) {
        return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2).strip()));
      }
      if (v.endsWith("s")) {
        return Duration.ofSeconds(Long.parseLong(v.substring(0, v.length() - 1).strip()));
      }
      if (v.endsWith("m")) {
        return Duration.ofMinutes(Long.parseLong(v.substring(0, v.length() - 1).strip()));
      }
      return Duration.ofMillis(Long.parseLong(v));
    } catch (NumberFormatException | DateTimeParseException e) {
      throw new IllegalArgumentException(
          name
              + " must be a duration such as 500 (milliseconds), 500ms, 2s or PT2S, got '"
              + value
              + "' in '"
              + shown
              + "'");
    }
  }
}
