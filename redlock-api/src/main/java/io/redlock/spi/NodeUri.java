package io.redlock.spi;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A node's address as the user wrote it, with its scheme ({@code jdbc:postgresql} for JDBC URLs)
 * and query options split out, and the parsing of option values every backend shares. {@link
 * #toString()} hides passwords and other secrets; {@link #raw()} is for opening the connection.
 */
public final class NodeUri {
  /** Query or H2-style options whose values are secrets. */
  private static final String SECRET_KEY =
      "(?i)([?&;](?:[a-z0-9_.-]*(?:password|passwd|secret|token|credentials?|apikey|api_key"
          + "|accesskey)|pass|pwd|authmechanismproperties)=)";

  private static final Pattern SECRET_PARAM =
      Pattern.compile(
          SECRET_KEY
              // An already redacted value followed by a delimiter stays as it is, so that
              // redacting twice (a redacted name inside a message) changes nothing more.
              + "(\\*\\*\\*(?=[&;\\s:,]|$)|[^&;\\s]*)");

  /** In one URI the value runs to the next option, spaces and '#' included. */
  private static final Pattern SECRET_PARAM_IN_URI = Pattern.compile(SECRET_KEY + "([^&;]*)");

  /**
   * Where an authority begins: {@code scheme://}, {@code jdbc:sub:proto://}, or a bare {@code //}
   * at the start of a word. A scheme-like word inside a password ({@code :pa://ss@}) is not one.
   */
  private static final Pattern AUTHORITY_START =
      Pattern.compile("(?<![A-Za-z0-9+.:/-])(?:[A-Za-z][A-Za-z0-9+.-]*:)*//");

  /** A user name that may show: no character that a password split into it would bring. */
  private static final Pattern PLAIN_USER = Pattern.compile("[A-Za-z0-9._~%+${}-]*");

  private static final String HOST = "(?:\\[[0-9A-Za-z:.%]*\\]|[A-Za-z0-9._~%${}-]*)";
  private static final String HOST_PORT = HOST + "(?::(?:\\d{1,5}|\\$\\{\\w+\\}))?";

  /** Hosts with numeric ports, as in a well-formed URI without user info. */
  private static final Pattern PLAIN_AUTHORITY =
      Pattern.compile(HOST_PORT + "(?:," + HOST_PORT + ")*[.,;:!\\]]*");

  private static final Pattern PLAIN_HOST = Pattern.compile(HOST);

  /** An authority this class redacted already. */
  private static final Pattern REDACTED_AUTHORITY = Pattern.compile("(?:" + HOST + ":)?\\*\\*\\*");

  /** Characters that end an authority without user info in running text. */
  private static final String AUTHORITY_END = "/?#'\"`<>()";

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
   * @throws IllegalArgumentException if it has no scheme or a bad port, naming the expected form
   */
  public static NodeUri parse(String uri) {
    String text = Objects.requireNonNull(uri, "node URI must not be null").strip();
    String example = "; expected e.g. redis://host:6379 or jdbc:postgresql://host/db";
    if (text.isEmpty()) {
      throw new IllegalArgumentException("node URI is empty" + example);
    }
    String scheme = schemeOf(text);
    if (scheme == null) {
      throw invalid(text, "has no scheme" + example);
    }
    if (!scheme.startsWith("jdbc:")
        && !text.startsWith("//", scheme.length() + 1)
        && text.indexOf('@') >= 0) {
      throw invalid(
          text,
          "has no scheme (it starts with user info); expected e.g."
              + " redis://user:password@host:6379 or postgresql://user:password@host/db");
    }
    if (hasBadPort(text)) {
      throw invalid(
          text,
          "has a bad port: a port is a number from 1 to 65535, e.g. redis://host:6379"
              + " (percent-encode '@', ':', '/', '?', '#' and spaces in a password)");
    }
    try {
      return new NodeUri(text, scheme, parseQuery(text));
    } catch (IllegalArgumentException e) {
      // URLDecoder's message quotes the bad part, which may be a piece of a password: no cause
      throw invalid(
          text, "has a '%' that does not start a %XX escape in its query; write % as %25");
    }
  }

  private static IllegalArgumentException invalid(String text, String problem) {
    return new IllegalArgumentException("node URI '" + redactUri(text) + "' " + problem);
  }

  /**
   * True if a {@code scheme://} URI names a port that is not a number from 1 to 65535. The hosts
   * follow the last '@'; as a '@' may also sit in the query, the URI is only refused if the hosts
   * before the first '?' or '#' have a bad port too.
   */
  private static boolean hasBadPort(String text) {
    Matcher m = AUTHORITY_START.matcher(text);
    if (!m.lookingAt()) {
      return false;
    }
    String rest = text.substring(m.end());
    return badPortIn(rest) && badPortIn(rest.substring(0, indexOfAny(rest, "?#", 0)));
  }

  private static boolean badPortIn(String authorityAndRest) {
    String hosts = authorityAndRest.substring(authorityAndRest.lastIndexOf('@') + 1);
    hosts = hosts.substring(0, indexOfAny(hosts, "/?#;", 0));
    for (String host : hosts.split(",", -1)) {
      String port;
      if (host.startsWith("[")) {
        int close = host.indexOf("]:");
        port = close < 0 ? "" : host.substring(close + 2);
      } else {
        int colon = host.lastIndexOf(':');
        port = colon < 0 ? "" : host.substring(colon + 1);
      }
      if (!port.isEmpty()
          && !(port.matches("\\d{1,5}")
              && Integer.parseInt(port) >= 1
              && Integer.parseInt(port) <= 65_535)) {
        return true;
      }
    }
    return false;
  }

  /** The first index from {@code from} of one of {@code chars} or of white space. */
  private static int indexOfAny(String s, String chars, int from) {
    for (int i = from; i < s.length(); i++) {
      if (chars.indexOf(s.charAt(i)) >= 0 || Character.isWhitespace(s.charAt(i))) {
        return i;
      }
    }
    return s.length();
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

  /**
   * Replaces passwords and secret query values in any text that holds URIs with {@code ***}. User
   * info ends at the last '@' before the next URI (or the end), so a password with an unencoded
   * '@', space or '/' is hidden whole; an authority without '@' that is not plain {@code host:port}
   * (a URI cut inside its password) is hidden from its first ':'.
   */
  public static String redact(String text) {
    if (text == null) {
      return null;
    }
    // options first: a '@' in a secret value would otherwise look like the end of user info
    return hideUserInfo(SECRET_PARAM.matcher(text).replaceAll("$1***"), false);
  }

  /**
   * Redacts one URI, given whole: as {@link #redact(String)}, but knowing where the URI ends it
   * also hides an option's value up to the next option (spaces included) and, in a URI without
   * {@code //}, everything before the last '@'. For messages about a URI that may be malformed.
   */
  public static String redactUri(String uri) {
    if (uri == null) {
      return null;
    }
    return hideUserInfo(SECRET_PARAM_IN_URI.matcher(uri).replaceAll("$1***"), true);
  }

  private static String hideUserInfo(String text, boolean oneUri) {
    Matcher m = AUTHORITY_START.matcher(text);
    boolean found = m.find();
    if (!found) {
      int at = text.lastIndexOf('@');
      if (!oneUri || at < 0) {
        return text;
      }
      // keep jdbc:oracle: of jdbc:oracle:thin:user/password@host; in user:password@host (no
      // scheme) what looks like one is the user, or part of the password
      String scheme = schemeOf(text);
      int start =
          scheme == null || !scheme.startsWith("jdbc:") ? 0 : Math.min(scheme.length() + 1, at);
      return text.substring(0, start) + "***" + text.substring(at);
    }
    StringBuilder out = new StringBuilder();
    int from = 0;
    while (found) {
      char opener = m.start() > 0 ? text.charAt(m.start() - 1) : ' ';
      int start = m.end();
      found = !oneUri && m.find();
      int end = found ? m.start() : text.length();
      out.append(text, from, start);
      int at = text.lastIndexOf('@', end - 1);
      if (at >= start) {
        out.append(hideUserInfo(text.substring(start, at)));
        from = at;
        continue;
      }
      int authorityEnd = Math.min(end, indexOfAny(text, AUTHORITY_END, start));
      String authority = text.substring(start, authorityEnd);
      if (PLAIN_AUTHORITY.matcher(authority).matches()
          || REDACTED_AUTHORITY.matcher(authority).matches()) {
        out.append(authority);
        from = authorityEnd;
        continue;
      }
      // cut inside a password: hide to the end of the URI, which in running text is the quote
      // that opened it, else the next URI or the end
      int close = oneUri ? -1 : closingQuote(text, opener, start, end);
      out.append(hideAuthority(authority));
      from = close < 0 ? end : close;
    }
    return out.append(text, from, text.length()).toString();
  }

  /** The index of the quote that closes one opened by {@code opener}, or -1. */
  private static int closingQuote(String text, char opener, int from, int end) {
    if (opener != '\'' && opener != '"') {
      return -1;
    }
    for (int i = text.indexOf(opener, from); i >= 0 && i < end; i = text.indexOf(opener, i + 1)) {
      if (i + 1 == text.length() || " \t\r\n:;,.)".indexOf(text.charAt(i + 1)) >= 0) {
        return i;
      }
    }
    return -1;
  }

  /** {@code user:***}, or {@code ***} when the user part could hold a piece of a password. */
  private static String hideUserInfo(String userInfo) {
    int colon = userInfo.indexOf(':');
    String user = colon < 0 ? userInfo : userInfo.substring(0, colon);
    if (!PLAIN_USER.matcher(user).matches()) {
      return "***";
    }
    return colon < 0 ? user : user + ":***";
  }

  /** The host before the first ':' and {@code :***}, or {@code ***} if it is not a plain host. */
  private static String hideAuthority(String authority) {
    int close = authority.startsWith("[") ? authority.indexOf(']') : -1;
    int colon = authority.indexOf(':', close + 1);
    String host = colon < 0 ? "" : authority.substring(0, colon);
    return colon > 0 && PLAIN_HOST.matcher(host).matches() ? host + ":***" : "***";
  }

  private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)?");

  /**
   * Option {@code name}'s value as a duration: milliseconds ({@code 500}), a number with a unit
   * ({@code 500ms}, {@code 2s}, {@code 1m}, {@code 24h}, {@code 7d}) or ISO-8601 ({@code PT2S}).
   *
   * @throws IllegalArgumentException naming the option and the accepted forms
   */
  public static Duration duration(String name, String value) {
    String v = value.strip().toLowerCase(Locale.ROOT);
    Matcher m = DURATION.matcher(v);
    try {
      if (!m.matches()) {
        return Duration.parse(v.toUpperCase(Locale.ROOT));
      }
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2) == null ? "ms" : m.group(2)) {
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        case "d" -> Duration.ofDays(n);
        default -> Duration.ofMillis(n);
      };
    } catch (DateTimeParseException | ArithmeticException | NumberFormatException e) {
      throw new IllegalArgumentException(
          name
              + " must be a duration such as 500 (milliseconds), 500ms, 2s, 1m, 24h or PT2S, got '"
              + value
              + "'");
    }
  }

  /** Option {@code name}'s value as a whole number from {@code min} to {@code max}. */
  public static int integer(String name, String value, int min, int max) {
    try {
      int n = Integer.parseInt(value.strip());
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // the message below
    }
    throw new IllegalArgumentException(
        name + " must be a whole number from " + min + " to " + max + ", got '" + value + "'");
  }

  /** Option {@code name}'s value as a boolean: true/yes/1 or false/no/0. */
  public static boolean bool(String name, String value) {
    return switch (value.strip().toLowerCase(Locale.ROOT)) {
      case "true", "yes", "1" -> true;
      case "false", "no", "0" -> false;
      default ->
          throw new IllegalArgumentException(name + " must be true or false, got '" + value + "'");
    };
  }

  /**
   * The error for an option a backend does not know, listing those it does; a name that could be a
   * piece of a password (after an unencoded '?') is not shown.
   */
  public static IllegalArgumentException unknownOption(
      String name, String uri, Collection<String> known) {
    return new IllegalArgumentException(
        "unknown option "
            + (name.matches("[A-Za-z0-9_.-]+")
                ? "'" + name + "'"
                : "(not shown: it could be a piece of a password with an unencoded '?')")
            + " in '"
            + redactUri(uri)
            + "'; known options: "
            + String.join(", ", known));
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

  /** The URI with passwords and secret options replaced by {@code ***}; see {@link #redactUri}. */
  public String redacted() {
    return redactUri(raw);
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
