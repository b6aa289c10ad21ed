package io.redlock.redis;

import io.redlock.spi.NodeUri;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Reads a {@code redis://} or {@code rediss://} URI into a {@link RedisLockNode.Builder}. Every
 * error names the problem and the accepted values; none shows the password.
 */
final class RedisUri {
  private static final List<String> KNOWN_OPTIONS =
      List.of(
          "connectTimeout database keyPrefix password poolSize socketTimeout user verifyHostname"
              .split(" "));

  private RedisUri() {}

  /** Applies a {@code redis://} or {@code rediss://} URI; a bad part is an error naming it. */
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
      if (colon < 0) {
        // ambiguous (a user or a password?): refuse rather than guess
        throw new IllegalArgumentException(
            "Redis URI '"
                + shown
                + "' has credentials without a colon; write redis://:password@host for a password"
                + " or redis://user:password@host for an ACL user");
      }
      b.user(decode(userInfo.substring(0, colon), shown));
      b.password(decode(userInfo.substring(colon + 1), shown));
    }
    String path = uri.getRawPath();
    if (path != null && !path.isEmpty() && !path.equals("/")) {
      String db = path.substring(1);
      b.database(NodeUri.integer("database (the URI path)", db, 0, Integer.MAX_VALUE));
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
    try {
      switch (name) {
        case "user" -> b.user(value);
        case "password" -> b.password(value);
        case "database" -> b.database(NodeUri.integer(name, value, 0, Integer.MAX_VALUE));
        case "connectTimeout" -> b.connectTimeout(NodeUri.duration(name, value));
        case "socketTimeout" -> b.socketTimeout(NodeUri.duration(name, value));
        case "poolSize" -> b.poolSize(NodeUri.integer(name, value, 0, Integer.MAX_VALUE));
        case "keyPrefix" -> b.keyPrefix(value);
        case "verifyHostname" -> b.verifyHostname(NodeUri.bool(name, value));
        default -> throw NodeUri.unknownOption(name, shown, KNOWN_OPTIONS);
      }
    } catch (IllegalArgumentException e) {
      throw e.getMessage().contains(shown)
          ? e
          : new IllegalArgumentException(e.getMessage() + " in '" + shown + "'");
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
}
