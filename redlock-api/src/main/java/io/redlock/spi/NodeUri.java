package io.redlock.spi;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A node's address as the user wrote it, with its scheme and query options split out. {@link
 * #toString()} and {@link #redacted()} hide passwords and other secrets, so a NodeUri is safe to
 * print; {@link #raw()} is for the backend that opens the connection.
 *
 * <p>The scheme of {@code jdbc:} URLs includes the sub-protocol ({@code jdbc:postgresql}); for
 * others it is the part before {@code ://} or the first {@code :}.
 */
public final class NodeUri {
  private static final Pattern SECRET_PARAM =
      Pattern.compile(
          "(?i)([?&;](?:[a-z]*password|pass|pwd|secret|token|apikey|api_key|accesskey|authmechanismproperties)=)"
              // An already redacted value followed by a delimiter stays as it is, so that
              // redacting twice (a redacted name inside a message) changes nothing more.
              + "(\\*\\*\\*(?=[&;\\s:,]|$)|[^&;\\s]*)");
  private static final Pattern USERINFO_PASSWORD = Pattern.compile("(//[^/@:?#]*:)([^/@]*)(@)");

  private final String raw;
  private final String scheme;
  private final Map<String, String> query;

  private NodeUri(String raw, String scheme, Map<String, String> query) {
    this.raw = raw;
    this.scheme = scheme;
    this.query = query;
  }

  /**
   * Parses a node URI.
   *
   * @throws IllegalArgumentException if it has no scheme, naming the expected form
   */
  public static NodeUri parse(String uri) {
    Objects.requireNonNull(uri, "node URI must not be null");
    String text = uri.strip();
    if (text.isEmpty()) {
      throw new IllegalArgumentException(
          "node URI is empty; expected e.g. redis://host:6379 or jdbc:postgresql://host/db");
    }
    String scheme = schemeOf(text);
    if (scheme == null) {
      throw new IllegalArgumentException(
          "node URI '"
              + redact(text)
              + "' has no scheme; expected e.g. redis://host:6379 or jdbc:postgresql://host/db");
    }
    return new NodeUri(text, scheme, parseQuery(text));
  }

  private static String schemeOf(String text) {
    String lower = text.toLowerCase(Locale.ROOT);
    if (lower.startsWith("jdbc:")) {
      int end = lower.indexOf(':', 5);
      return end > 5 ? lower.substring(0, end) : null;
    }
    int end = lower.indexOf(':');
    if (end <= 0) {
      return null;
    }
    String scheme = lower.substring(0, end);
    return scheme.matches("[a-z][a-z0-9+.-]*") ? scheme : null;
  }

  private static Map<String, String> parseQuery(String text) {
    int q = text.indexOf('?');
    if (q < 0) {
      return Map.of();
    }
    int hash = text.indexOf('#', q);
    String query = hash < 0 ? text.substring(q + 1) : text.substring(q + 1, hash);
    Map<String, String> out = new LinkedHashMap<>();
    for (String pair : query.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String key = decode(eq < 0 ? pair : pair.substring(0, eq));
      String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
      out.put(key, value);
    }
    return Collections.unmodifiableMap(out);
  }

  private static String decode(String s) {
    return URLDecoder.decode(s, StandardCharsets.UTF_8);
  }

  /** Replaces passwords and secret query values in any URI-like text with {@code ***}. */
  public static String redact(String text) {
    if (text == null) {
      return null;
    }
    String out = USERINFO_PASSWORD.matcher(text).replaceAll("$1***$3");
    Matcher m = SECRET_PARAM.matcher(out);
    return m.replaceAll("$1***");
  }

  /** The URI exactly as given. Contains secrets: never print or log it. */
  public String raw() {
    return raw;
  }

  /** The scheme, lower case: {@code redis}, {@code jdbc:postgresql}, {@code mongodb+srv}... */
  public String scheme() {
    return scheme;
  }

  /** The query options, decoded, in their order (secrets included: do not print). */
  public Map<String, String> query() {
    return query;
  }

  /** The URI with passwords and secret options replaced by {@code ***}. */
  public String redacted() {
    return redact(raw);
  }

  /** Same as {@link #redacted()}. */
  @Override
  public String toString() {
    return redacted();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof NodeUri other && raw.equals(other.raw);
  }

  @Override
  public int hashCode() {
    return raw.hashCode();
  }
}
