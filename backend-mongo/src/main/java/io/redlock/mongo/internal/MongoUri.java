package io.redlock.mongo.internal;

import io.redlock.spi.NodeUri;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A {@code mongodb://} or {@code mongodb+srv://} connection string split into the part the driver
 * sees and this library's own {@code redlock.*} options, which are taken out first: the driver
 * would warn about options it does not know.
 *
 * @param driverUri the connection string without {@code redlock.*} options
 * @param options the {@code redlock.*} options, decoded, keyed by their lower-case name without the
 *     prefix
 * @param redacted the connection string as given, with every secret replaced by {@code ***}
 */
public record MongoUri(String driverUri, Map<String, String> options, String redacted) {

  /** The prefix of this library's options in the query. */
  public static final String PREFIX = "redlock.";

  /** Option: the database holding the lock collection. */
  public static final String DATABASE = "database";

  /** Option: the lock collection. */
  public static final String COLLECTION = "collection";

  /** Option: age after which a TTL index removes abandoned lock documents. */
  public static final String GC_AFTER = "gcafter";

  /** Option: worker threads per node. */
  public static final String THREADS = "threads";

  /** The options this library knows, as users write them. */
  public static final List<String> KNOWN =
      List.of(PREFIX + "database", PREFIX + "collection", PREFIX + "gcAfter", PREFIX + "threads");

  // Secrets the generic NodeUri.redact does not know: MongoDB's own option names.
  private static final Pattern MONGO_SECRETS =
      Pattern.compile(
          "(?i)([?&;](?:[a-z0-9_.]*password|[a-z0-9_.]*secret|[a-z0-9_.]*token|authmechanismproperties)=)([^&;#]*)");

  /**
   * Splits a connection string.
   *
   * @throws IllegalArgumentException if it is not a MongoDB connection string, or names an unknown
   *     {@code redlock.*} option
   */
  public static MongoUri parse(String uri) {
    if (uri == null || uri.isBlank()) {
      throw new IllegalArgumentException(
          "MongoDB connection string is empty; expected e.g. mongodb://host:27017/redlock");
    }
    String text = uri.strip();
    String lower = text.toLowerCase(Locale.ROOT);
    String redacted = MONGO_SECRETS.matcher(NodeUri.redactUri(text)).replaceAll("$1***");
    if (!lower.startsWith("mongodb://") && !lower.startsWith("mongodb+srv://")) {
      throw new IllegalArgumentException(
          "'"
              + redacted
              + "' is not a MongoDB connection string; it must start with mongodb:// or"
              + " mongodb+srv://");
    }
    NodeUri.parse(text); // a bad port, named with the URI

    int q = text.indexOf('?');
    if (q < 0) {
      return new MongoUri(text, Map.of(), redacted);
    }
    Map<String, String> options = new LinkedHashMap<>();
    List<String> kept = new ArrayList<>();
    for (String pair : text.substring(q + 1).split("[&;]")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = decode(eq < 0 ? pair : pair.substring(0, eq), redacted);
      if (!name.toLowerCase(Locale.ROOT).startsWith(PREFIX)) {
        kept.add(pair);
        continue;
      }
      String key = name.substring(PREFIX.length()).toLowerCase(Locale.ROOT);
      if (!List.of(DATABASE, COLLECTION, GC_AFTER, THREADS).contains(key)) {
        throw new IllegalArgumentException(
            "unknown option '"
                + name
                + "' in "
                + redacted
                + "; the options of the MongoDB lock node are "
                + String.join(", ", KNOWN)
                + " (all others go to the MongoDB driver)");
      }
      if (eq < 0 || eq == pair.length() - 1) {
        throw new IllegalArgumentException(
            "option '" + name + "' in " + redacted + " has no value; write " + name + "=...");
      }
      if (options.put(key, decode(pair.substring(eq + 1), redacted)) != null) {
        throw new IllegalArgumentException(
            "option '" + name + "' is given twice in " + redacted + "; keep one");
      }
    }
    String base = text.substring(0, q);
    String driverUri = kept.isEmpty() ? base : base + "?" + String.join("&", kept);
    return new MongoUri(driverUri, Map.copyOf(options), redacted);
  }

  /** Any text with MongoDB passwords and secret options replaced by {@code ***}. */
  public static String redact(String text) {
    if (text == null) {
      return null;
    }
    return MONGO_SECRETS.matcher(NodeUri.redact(text)).replaceAll("$1***");
  }

  private static String decode(String s, String redacted) {
    try {
      // '+' is a literal plus in a connection string, not a space as in HTML forms
      return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "malformed percent-encoding in an option of " + redacted + ": " + e.getMessage(), e);
    }
  }

  /** The redacted form only: the driver URI may hold a password. */
  @Override
  public String toString() {
    return redacted;
  }
}
