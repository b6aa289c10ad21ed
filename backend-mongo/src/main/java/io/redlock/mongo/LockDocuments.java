package io.redlock.mongo;

import static com.mongodb.client.model.Filters.and;
import static com.mongodb.client.model.Filters.eq;
import static com.mongodb.client.model.Filters.exists;
import static com.mongodb.client.model.Filters.expr;

import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Collation;
import com.mongodb.client.model.DeleteOptions;
import com.mongodb.client.model.FindOneAndUpdateOptions;
import com.mongodb.client.model.IndexOptions;
import com.mongodb.client.model.Indexes;
import com.mongodb.client.model.ReturnDocument;
import com.mongodb.client.model.UpdateOptions;
import com.mongodb.client.model.Updates;
import com.mongodb.client.result.UpdateResult;
import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.mongo.internal.MongoErrors;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import java.time.Duration;
import java.util.Date;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The single-document writes of a {@link MongoLockNode} (see its class comment), which MongoDB
 * applies atomically. A key is live while {@code at + ttlMs > $$NOW}, the server's clock at the
 * time of the write. A released key that has a fencing counter keeps its document, without token
 * and with {@code ttlMs = -10^12}, so that it counts as expired whatever the server's clock does.
 */
final class LockDocuments {
  private static final Logger LOG = LoggerFactory.getLogger(MongoLockNode.class);

  // Document fields and the TTL index's name.
  static final String TOKEN = "token";
  static final String TTL_MS = "ttlMs";
  static final String AT = "at";
  static final String FENCE = "fence";
  static final String GC_INDEX = "redlock_gc";

  /** The {@code ttlMs} of a released document that keeps its counter: about 31 years ago. */
  static final long RELEASED_TTL_MS = -1_000_000_000_000L;

  /** Counters below this (10^15 µs, 2001) have not been raised to the server's clock yet. */
  static final long FENCE_FLOOR_MIN = 1_000_000_000_000_000L;

  // Binary comparison of keys and tokens even if the collection was created with a collation.
  private static final Collation SIMPLE = Collation.builder().locale("simple").build();
  private static final Document EXPIRY = new Document("$add", List.of("$" + AT, "$" + TTL_MS));
  private static final Bson EXPIRED = expr(new Document("$lte", List.of(EXPIRY, "$$NOW")));
  private static final Bson LIVE = expr(new Document("$gt", List.of(EXPIRY, "$$NOW")));
  private static final UpdateOptions UPSERT = new UpdateOptions().upsert(true).collation(SIMPLE);
  private static final UpdateOptions UPDATE = new UpdateOptions().collation(SIMPLE);
  private static final FindOneAndUpdateOptions FENCED_UPSERT =
      new FindOneAndUpdateOptions()
          .upsert(true)
          .returnDocument(ReturnDocument.AFTER)
          .projection(new Document(FENCE, 1).append(AT, 1))
          .collation(SIMPLE);
  private static final FindOneAndUpdateOptions FENCE_FLOOR =
      new FindOneAndUpdateOptions()
          .returnDocument(ReturnDocument.AFTER)
          .projection(new Document(FENCE, 1))
          .collation(SIMPLE);

  private final String name;
  private final MongoCollection<Document> collection;

  /** Set once a fenced key was seen: release then tries keeping the document first. */
  private volatile boolean fencingSeen;

  LockDocuments(String name, MongoCollection<Document> collection) {
    this.name = name;
    this.collection = collection;
  }

  /** Conditional insert with expiry; with {@code fenced}, also increments the key's counter. */
  AcquireResult acquire(String key, String token, long ttlMs, boolean fenced) {
    Bson filter = and(eq("_id", key), EXPIRED);
    Bson take =
        Updates.combine(
            Updates.set(TOKEN, token), Updates.set(TTL_MS, ttlMs), Updates.currentDate(AT));
    try {
      if (fenced) {
        fencingSeen = true;
        return floored(
            key,
            token,
            collection.findOneAndUpdate(
                filter, Updates.combine(take, Updates.inc(FENCE, 1L)), FENCED_UPSERT));
      }
      UpdateResult result = collection.updateOne(filter, take, UPSERT);
      if (result.getUpsertedId() == null && result.getMatchedCount() != 1) {
        throw impossible("tryAcquire", "an upsert that neither matched nor inserted: " + result);
      }
      return AcquireResult.ACQUIRED;
    } catch (RuntimeException e) {
      if (MongoErrors.isDuplicateKey(e)) {
        return AcquireResult.HELD; // a live document has this _id
      }
      throw e;
    }
  }

  /**
   * The counter of a fenced acquisition. One that starts afresh (a new document, or one that had
   * none) comes back below {@link #FENCE_FLOOR_MIN}; it is then raised to {@code at × 1000 +
   * counter} by a second write guarded by this token. Until then nobody else can see the low value:
   * it is not returned, {@code raiseFence} needs this token, and another acquisition can only come
   * after this one expired, in which case the guard fails and this call answers "held" while the
   * later one raises the counter itself.
   */
  private AcquireResult floored(String key, String token, Document after) {
    if (after == null || !(after.get(AT) instanceof Date at)) {
      throw impossible("tryAcquireFenced", "an upsert with returnDocument AFTER returned " + after);
    }
    long fence = fence(after);
    if (fence >= FENCE_FLOOR_MIN) {
      return AcquireResult.acquired(fence);
    }
    long floor;
    try {
      floor = Math.addExact(Math.multiplyExact(Math.max(0, at.getTime()), 1000L), fence);
    } catch (ArithmeticException e) {
      throw counterOutOfRange(at.getTime() + " ms server time", e);
    }
    Document floored =
        collection.findOneAndUpdate(
            and(eq("_id", key), eq(TOKEN, token)), Updates.max(FENCE, floor), FENCE_FLOOR);
    // null: expired and taken by a later acquisition in between
    return floored == null ? AcquireResult.HELD : AcquireResult.acquired(fence(floored));
  }

  /**
   * Compare-and-delete. A document without a fencing counter is deleted; one with a counter is kept
   * (the counter must survive) and marked released. The two shapes are tried in turn, each atomic
   * and guarded by token and liveness, so exactly one can match; the likelier goes first.
   */
  boolean release(String key, String token) {
    return fencingSeen
        ? keepReleased(key, token) || deleteReleased(key, token)
        : deleteReleased(key, token) || keepReleased(key, token);
  }

  /** Compare-and-extend: the new expiry is the server's now plus {@code ttlMs}. */
  boolean extend(String key, String token, long ttlMs) {
    return updateLive(
        key, token, Updates.combine(Updates.set(TTL_MS, ttlMs), Updates.currentDate(AT)));
  }

  /** Raises a live key's counter to at least {@code atLeast} ({@code $max} never lowers it). */
  boolean raiseFence(String key, String token, long atLeast) {
    fencingSeen = true;
    return updateLive(key, token, Updates.max(FENCE, atLeast));
  }

  private boolean updateLive(String key, String token, Bson update) {
    return collection
            .updateOne(and(eq("_id", key), eq(TOKEN, token), LIVE), update, UPDATE)
            .getMatchedCount()
        == 1;
  }

  /**
   * Who holds {@code key}: the live document's token, and its expiry less the server's clock read
   * right after (the document is found by that clock too).
   */
  Optional<KeyHolder> holder(String key, LongSupplier serverMillis) {
    Document live = collection.find(and(eq("_id", key), LIVE)).collation(SIMPLE).first();
    if (live == null || !(live.get(TOKEN) instanceof String token)) {
      return Optional.empty();
    }
    long expiry = live.getDate(AT).getTime() + ((Number) live.get(TTL_MS)).longValue();
    long left = expiry - serverMillis.getAsLong();
    return Optional.of(new KeyHolder(token, Duration.ofMillis(Math.max(0, left))));
  }

  /**
   * Creates the TTL index of {@code redlock.gcAfter}; returns false if it may work next time
   * (transient failure), true once it exists or cannot be made (then says so once).
   */
  boolean createGcIndex(Duration gcAfter) {
    try {
      collection.createIndex(
          Indexes.ascending(AT),
          new IndexOptions().name(GC_INDEX).expireAfter(gcAfter.toSeconds(), TimeUnit.SECONDS));
      return true;
    } catch (RuntimeException e) {
      RedlockException failure =
          MongoErrors.translate(e, name, "creating the TTL index", collection);
      if (failure instanceof RedlockTransientException) {
        LOG.debug("{}; will try again with the next call", failure.getMessage());
        return false;
      }
      // e.g. an index of that name with other options, or no createIndex privilege
      LOG.warn(
          "{}. Locks still work (expiry never depends on this index) but abandoned lock documents"
              + " are not removed; create a TTL index on '{}' yourself or drop index '{}'",
          failure.getMessage(),
          AT,
          GC_INDEX);
      return true;
    }
  }

  private boolean deleteReleased(String key, String token) {
    return collection
            .deleteOne(
                and(eq("_id", key), eq(TOKEN, token), LIVE, exists(FENCE, false)),
                new DeleteOptions().collation(SIMPLE))
            .getDeletedCount()
        == 1;
  }

  private boolean keepReleased(String key, String token) {
    boolean kept =
        collection
                .updateOne(
                    and(eq("_id", key), eq(TOKEN, token), LIVE, exists(FENCE, true)),
                    Updates.combine(Updates.unset(TOKEN), Updates.set(TTL_MS, RELEASED_TTL_MS)),
                    UPDATE)
                .getMatchedCount()
            == 1;
    fencingSeen |= kept;
    return kept;
  }

  private long fence(Document doc) {
    if (!(doc.get(FENCE) instanceof Number n) || n.longValue() <= 0) {
      throw counterOutOfRange(String.valueOf(doc.get(FENCE)), null);
    }
    return n.longValue();
  }

  private RedlockNonTransientException counterOutOfRange(String value, Throwable cause) {
    return new RedlockNonTransientException(
        name,
        "the fencing counter of a key in "
            + collection.getNamespace().getFullName()
            + " is out of range ("
            + value
            + "); fencing counters are positive 64-bit integers far below 2^63: was the document"
            + " changed by hand, or a counter raised close to the limit?",
        cause);
  }

  private RedlockNonTransientException impossible(String operation, String answer) {
    return new RedlockNonTransientException(
        name,
        operation
            + " got an impossible answer from the server ("
            + answer
            + "); is this a MongoDB-compatible server that supports upserts with $expr and"
            + " findAndModify?",
        null);
  }
}
