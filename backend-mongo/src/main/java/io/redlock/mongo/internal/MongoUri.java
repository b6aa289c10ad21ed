package io.redlock.mongo.internal;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.MongoNamespace;
import com.mongodb.ReadPreference;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.event.ConnectionCreatedEvent;
import com.mongodb.event.ConnectionPoolListener;
import io.redlock.spi.NodeUri;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * A {@code mongodb://} or {@code mongodb+srv://} connection string split into the part the driver
 * sees and this library's {@code redlock.*} options (decoded, keyed by lower-case name without the
 * prefix), which the driver would warn about.
 */
public record MongoUri(String driverUri, Map<String, String> options, String redacted) {

  private static final String PREFIX = "redlock.";

  /** This library's options, as users write them; {@link #options} keys them by lower case. */
  private static final List<String> KNOWN =
      List.of("redlock.database", "redlock.collection", "redlock.gcAfter", "redlock.threads");

  // Secrets the generic NodeUri.redact does not know: MongoDB's own option names.
  private static final Pattern MONGO_SECRETS =
      Pattern.compile(
          "(?i)([?&;](?:[a-z0-9_.]*password|[a-z0-9_.]*secret|[a-z0-9_.]*token|authmechanismproperties)=)([^&;#]*)");

  /** Splits a connection string; an unknown {@code redlock.*} option is an error. */
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
      if (KNOWN.stream().noneMatch(name::equalsIgnoreCase)) {
        throw new IllegalArgumentException(
            NodeUri.unknownOption(name, redacted, KNOWN).getMessage()
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

  /** The driver's view of {@link #driverUri}; a malformed one is an error without secrets. */
  public ConnectionString connectionString() {
    try {
      return new ConnectionString(driverUri);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "invalid MongoDB connection string " + redacted + ": " + redact(e.getMessage()), e);
    }
  }

  /** The library's defaults, then the connection string's options, primary reads, the concern. */
  private static MongoClientSettings.Builder driverSettings(
      ConnectionString cs, WriteConcern writeConcern) {
    return MongoClientSettings.builder()
        .applyToClusterSettings(c -> c.serverSelectionTimeout(2000, TimeUnit.MILLISECONDS))
        .applyToSocketSettings(
            s -> {
              s.connectTimeout(2000, TimeUnit.MILLISECONDS);
              if (cs.getTimeout() == null) {
                s.readTimeout(5000, TimeUnit.MILLISECONDS);
              }
            })
        .applicationName("redlock")
        .applyConnectionString(cs)
        .readPreference(ReadPreference.primary())
        .writeConcern(writeConcern);
  }

  /** A node's own client, counting the connections it opens (they make a cached status stale). */
  public static MongoClient createClient(
      ConnectionString cs,
      WriteConcern writeConcern,
      AtomicLong connections,
      Consumer<MongoClientSettings.Builder> customizer) {
    MongoClientSettings.Builder driver = driverSettings(cs, writeConcern);
    driver.applyToConnectionPoolSettings(
        p ->
            p.addConnectionPoolListener(
                new ConnectionPoolListener() {
                  @Override
                  public void connectionCreated(ConnectionCreatedEvent event) {
                    connections.incrementAndGet();
                  }
                }));
    if (customizer != null) {
      customizer.accept(driver);
    }
    return MongoClients.create(driver.build());
  }

  /** The lock collection's namespace, refusing names that MongoDB would refuse or reserves. */
  public static MongoNamespace namespace(String database, String collection) {
    try {
      MongoNamespace.checkDatabaseNameValidity(database);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "database name '" + database + "' is not allowed by MongoDB: " + e.getMessage(), e);
    }
    if (database.indexOf('$') >= 0 || database.getBytes(StandardCharsets.UTF_8).length > 63) {
      throw new IllegalArgumentException(
          "database name '" + database + "' is not allowed by MongoDB: no '$', at most 63 bytes");
    }
    if (collection.isEmpty() || collection.indexOf('$') >= 0 || collection.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          "collection name '" + collection + "' must not be empty or contain '$' or NUL");
    }
    if (collection.startsWith("system.")) {
      throw new IllegalArgumentException(
          "collection name '" + collection + "' is reserved by MongoDB (system.*); pick another");
    }
    return new MongoNamespace(database, collection);
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
