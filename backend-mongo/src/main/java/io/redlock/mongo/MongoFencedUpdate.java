package io.redlock.mongo;

import com.mongodb.ErrorCategory;
import com.mongodb.MongoClientSettings;
import com.mongodb.MongoWriteException;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.Projections;
import com.mongodb.client.model.UpdateOptions;
import com.mongodb.client.model.Updates;
import com.mongodb.client.result.UpdateResult;
import io.redlock.RedlockTransientException;
import io.redlock.StaleFencingTokenException;
import java.util.Objects;
import java.util.regex.Pattern;
import org.bson.BsonDocument;
import org.bson.BsonValue;
import org.bson.codecs.configuration.CodecConfigurationException;
import org.bson.codecs.configuration.CodecRegistry;
import org.bson.conversions.Bson;

/**
 * Fencing on the protected resource's side when it is a document of the application's own MongoDB
 * collection: an update carrying a lease's {@link io.redlock.Lease#fencingToken() fencing token}
 * applies only if the token is at least the highest the document accepted, kept in a 64-bit field
 * ({@code fence} by default; a document without it accepted none). Check and write are one {@code
 * updateOne}, decided atomically by the server.
 *
 * <pre>{@code
 * static final MongoFencedUpdate FENCED = MongoFencedUpdate.create();
 *
 * try (Lease lease = redlock.acquire("invoice-42", ttl, maxWait)) {
 *   boolean found = FENCED.updateOne(invoices, Filters.eq("_id", 42),
 *       Updates.combine(Updates.set("amount", 120), Updates.set("status", "paid")),
 *       lease.fencingToken());
 *   // StaleFencingTokenException: a newer lease wrote the document; stop
 * }
 * }</pre>
 *
 * <p>An equal token is accepted again (one lease may write many times), as with {@link
 * io.redlock.FencingGuard}. {@link #filter} and {@link #update} give the two parts for other calls
 * ({@code findOneAndUpdate}, bulk writes). Plain update operators only. Thread-safe.
 */
public final class MongoFencedUpdate {
  /** The default name of the fence field. */
  public static final String DEFAULT_FENCE_FIELD = "fence";

  private static final Pattern FIELD = Pattern.compile("[^$.\\x00][^.\\x00]*");

  /** Attempts when the document changes between the update and the read that explains it. */
  private static final int ATTEMPTS = 3;

  private final String fenceField;

  private MongoFencedUpdate(String fenceField) {
    this.fenceField = fenceField;
  }

  /** Fenced updates that keep the highest token in the field {@value #DEFAULT_FENCE_FIELD}. */
  public static MongoFencedUpdate create() {
    return new MongoFencedUpdate(DEFAULT_FENCE_FIELD);
  }

  /** Fenced updates keeping the highest token in {@code fenceField}, a top-level field name. */
  public static MongoFencedUpdate create(String fenceField) {
    if (fenceField == null || !FIELD.matcher(fenceField).matches()) {
      throw new IllegalArgumentException(
          "invalid fence field "
              + (fenceField == null ? "null" : "'" + fenceField + "'")
              + ": use a non-empty top-level field name, without '.' and not starting with '$'");
    }
    return new MongoFencedUpdate(fenceField);
  }

  /** The field that keeps the highest token accepted. */
  public String fenceField() {
    return fenceField;
  }

  /** {@code {$and: [idFilter, {$or: [{fence: {$lte: token}}, {fence: null}]}]}}. */
  public Bson filter(Bson idFilter, long token) {
    requireFilter(idFilter);
    requireToken(token);
    return Filters.and(
        idFilter, Filters.or(Filters.lte(fenceField, token), Filters.eq(fenceField, null)));
  }

  /**
   * {@code update} plus {@code $set: {fence: token}}.
   *
   * @throws IllegalArgumentException for a replacement document or one that writes the fence
   */
  public Bson update(Bson update, long token) {
    return update(update, token, MongoClientSettings.getDefaultCodecRegistry());
  }

  /**
   * {@code updateOne(filter(idFilter, token), update(update, token))}; when nothing matched, reads
   * the document's fence to tell a stale token from a missing document.
   *
   * @return true if updated; false if no document matches {@code idFilter}
   * @throws StaleFencingTokenException if a newer lease wrote the document; nothing was written
   */
  public boolean updateOne(MongoCollection<?> collection, Bson idFilter, Bson update, long token) {
    return updateOne(collection, idFilter, update, token, new UpdateOptions());
  }

  /**
   * With {@code options}; with {@code upsert(true)} a missing document is inserted, and one with a
   * higher fence (the insert collides on its key) is a {@link StaleFencingTokenException}.
   */
  public boolean updateOne(
      MongoCollection<?> collection,
      Bson idFilter,
      Bson update,
      long token,
      UpdateOptions options) {
    Objects.requireNonNull(collection, "collection must not be null");
    Objects.requireNonNull(options, "options must not be null");
    Bson filter = filter(idFilter, token);
    Bson fencedUpdate = update(update, token, collection.getCodecRegistry());
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
      try {
        UpdateResult result = collection.updateOne(filter, fencedUpdate, options);
        if (result.getMatchedCount() > 0 || result.getUpsertedId() != null) {
          return true;
        }
      } catch (MongoWriteException e) {
        if (!options.isUpsert()
            || ErrorCategory.fromErrorCode(e.getError().getCode()) != ErrorCategory.DUPLICATE_KEY) {
          throw e;
        }
        // the upsert's insert met the existing document: its fence is above the token (read below)
      }
      Long fence = currentFence(collection, idFilter);
      if (fence == null) {
        if (!options.isUpsert()) {
          return false;
        }
        // deleted since the upsert collided: try again
      } else if (fence > token) {
        throw new StaleFencingTokenException(resource(collection, idFilter), token, fence);
      }
      // else inserted, or its fence lowered, since the update: run it again
    }
    throw new RedlockTransientException(
        null,
        "the fenced update of "
            + resource(collection, idFilter)
            + " matched nothing "
            + ATTEMPTS
            + " times although the document exists with a fence at most the token: it keeps"
            + " changing between operations; retry",
        null);
  }

  private Bson update(Bson update, long token, CodecRegistry codecs) {
    if (update == null) {
      throw new IllegalArgumentException("update must not be null");
    }
    requireToken(token);
    BsonDocument rendered;
    try {
      rendered = update.toBsonDocument(BsonDocument.class, codecs);
    } catch (CodecConfigurationException e) {
      rendered = null; // values this registry cannot encode: the server checks the shape instead
    }
    if (rendered != null) {
      for (String key : rendered.keySet()) {
        if (!key.startsWith("$")) {
          throw new IllegalArgumentException(
              "update must use update operators such as $set (a replacement document or a"
                  + " pipeline cannot be fenced), got top-level key '"
                  + key
                  + "'");
        }
        BsonValue fields = rendered.get(key);
        if (fields.isDocument() && touchesFence(fields.asDocument())) {
          throw new IllegalArgumentException(
              "update must not write the fence field '"
                  + fenceField
                  + "' (found in "
                  + key
                  + "): the fenced update sets it to the token itself");
        }
      }
    }
    return Updates.combine(update, Updates.set(fenceField, token));
  }

  private boolean touchesFence(BsonDocument fields) {
    for (String path : fields.keySet()) {
      if (path.equals(fenceField) || path.startsWith(fenceField + ".")) {
        return true;
      }
    }
    return false;
  }

  /** The document's fence (0 if missing or null), or null if there is no document. */
  private Long currentFence(MongoCollection<?> collection, Bson idFilter) {
    BsonDocument doc =
        collection
            .withDocumentClass(BsonDocument.class)
            .find(idFilter)
            .projection(Projections.include(fenceField))
            .first();
    if (doc == null) {
      return null;
    }
    BsonValue fence = doc.get(fenceField);
    if (fence == null || fence.isNull()) {
      return 0L;
    }
    if (!fence.isNumber()) {
      throw new IllegalStateException(
          "the fence field '"
              + fenceField
              + "' of "
              + resource(collection, idFilter)
              + " holds a "
              + fence.getBsonType()
              + ", not a number: it must hold only fencing tokens (64-bit integers)");
    }
    return fence.asNumber().longValue();
  }

  private static String resource(MongoCollection<?> collection, Bson idFilter) {
    String filter;
    try {
      filter = idFilter.toBsonDocument(BsonDocument.class, collection.getCodecRegistry()).toJson();
    } catch (CodecConfigurationException e) {
      filter = idFilter.toString();
    }
    return collection.getNamespace().getFullName() + " " + filter;
  }

  private static void requireFilter(Bson idFilter) {
    if (idFilter == null) {
      throw new IllegalArgumentException(
          "idFilter must not be null: pass the filter of one document, e.g. Filters.eq(\"_id\", id)");
    }
  }

  private static void requireToken(long token) {
    if (token <= 0) {
      throw new IllegalArgumentException(
          "a fencing token is positive, got " + token + "; pass lease.fencingToken()");
    }
  }

  @Override
  public String toString() {
    return "MongoFencedUpdate[" + fenceField + "]";
  }
}
