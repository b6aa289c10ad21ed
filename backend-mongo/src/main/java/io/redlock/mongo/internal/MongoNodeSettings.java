package io.redlock.mongo.internal;

import com.mongodb.WriteConcern;
import java.time.Duration;
import java.util.Objects;

/**
 * The settings of one MongoDB lock node, validated.
 *
 * @param name the node's name for messages: the connection string, redacted
 * @param database the database holding the lock collection
 * @param collection the lock collection
 * @param writeConcern the write concern of every lock operation; must be acknowledged
 * @param gcAfter age (since acquire or extend) after which a TTL index removes a lock document, or
 *     {@code null} for no TTL index; TTLs may not exceed it
 * @param threads worker threads that run the blocking driver calls
 */
public record MongoNodeSettings(
    String name,
    String database,
    String collection,
    WriteConcern writeConcern,
    Duration gcAfter,
    int threads) {

  /** Most worker threads one node may have. */
  public static final int MAX_THREADS = 256;

  /** Validates, with messages that name the setting and the fix. */
  public MongoNodeSettings {
    Objects.requireNonNull(name, "name");
    requireDatabaseName(database);
    requireCollectionName(collection);
    Objects.requireNonNull(writeConcern, "writeConcern");
    if (!writeConcern.isAcknowledged()) {
      throw new IllegalArgumentException(
          "write concern w=0 is unacknowledged: the lock node could not tell 'acquired' from"
              + " 'held'; use w=majority (the default) or w=1");
    }
    if (gcAfter != null && (gcAfter.compareTo(Duration.ofSeconds(1)) < 0)) {
      throw new IllegalArgumentException(
          "gcAfter must be at least 1 second (MongoDB's TTL index counts whole seconds), got "
              + gcAfter);
    }
    if (threads < 1 || threads > MAX_THREADS) {
      throw new IllegalArgumentException(
          "threads must be between 1 and " + MAX_THREADS + ", got " + threads);
    }
  }

  /** Rejects database names MongoDB would refuse, before any connection is made. */
  static void requireDatabaseName(String database) {
    if (database == null || database.isEmpty()) {
      throw new IllegalArgumentException("database name must not be empty (default: redlock)");
    }
    for (char c : new char[] {'/', '\\', '.', ' ', '"', '$', '\0'}) {
      if (database.indexOf(c) >= 0) {
        throw new IllegalArgumentException(
            "database name '"
                + database
                + "' contains '"
                + (c == '\0' ? "\\0" : String.valueOf(c))
                + "', which MongoDB does not allow in database names");
      }
    }
    if (database.getBytes(java.nio.charset.StandardCharsets.UTF_8).length >= 64) {
      throw new IllegalArgumentException(
          "database name '" + database + "' is too long: MongoDB allows at most 63 bytes");
    }
  }

  /** Rejects collection names MongoDB would refuse or reserves. */
  static void requireCollectionName(String collection) {
    if (collection == null || collection.isEmpty()) {
      throw new IllegalArgumentException("collection name must not be empty (default: locks)");
    }
    if (collection.indexOf('$') >= 0 || collection.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          "collection name '" + collection + "' must not contain '$' or a NUL character");
    }
    if (collection.startsWith("system.")) {
      throw new IllegalArgumentException(
          "collection name '" + collection + "' is reserved by MongoDB (system.*); pick another");
    }
  }
}
