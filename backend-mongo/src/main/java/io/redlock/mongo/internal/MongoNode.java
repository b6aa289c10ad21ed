package io.redlock.mongo.internal;

import static com.mongodb.client.model.Filters.and;
import static com.mongodb.client.model.Filters.eq;
import static com.mongodb.client.model.Filters.exists;
import static com.mongodb.client.model.Filters.expr;

import com.mongodb.ReadPreference;
import com.mongodb.client.MongoClient;
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
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.spi.support.Replies;
import java.time.Duration;
import java.util.Date;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The MongoDB lock node: one document per key, {@code {_id: key, token, ttlMs, at}} (plus {@code
 * fence} once the key is used with fencing), where {@code at} is set by the server ({@code
 * $currentDate}) and the key counts as held while {@code at + ttlMs > $$NOW}, the server's clock at
 * the time of the operation. Each operation is one single-document write, which MongoDB applies
 * atomically:
 *
 * <ul>
 *   <li>acquire: {@code updateOne({_id: key, $expr: {$lte: [{$add: ["$at", "$ttlMs"]}, "$$NOW"]}},
 *       {$set: {token, ttlMs}, $currentDate: {at: true}}, {upsert: true})}. An expired document
 *       matches and is taken over; no document means an insert; a live document does not match, so
 *       the upsert's insert collides on {@code _id} (error 11000), which means "held".
 *   <li>fenced acquire: the same filter and update plus {@code $inc: {fence: 1}}, as one {@code
 *       findOneAndUpdate} that returns the new counter. A counter that starts afresh (a new or lost
 *       document) is then raised once to {@code at} in microseconds plus itself, guarded by the
 *       caller's token; see {@link #tryAcquireFenced}.
 *   <li>release: {@code deleteOne({_id: key, token, $expr: live, fence: {$exists: false}})}, or for
 *       a document with a counter {@code updateOne({_id: key, token, $expr: live, fence: {$exists:
 *       true}}, {$unset: {token}, $set: {ttlMs: -10^12}})}, which keeps the counter and leaves a
 *       document that counts as expired whatever the server's clock does.
 *   <li>extend: {@code updateOne({_id: key, token, $expr: live}, {$set: {ttlMs}, $currentDate: {at:
 *       true}})}.
 *   <li>raise a fence: {@code updateOne({_id: key, token, $expr: live}, {$max: {fence: atLeast}})}.
 * </ul>
 *
 * <p>Update pipelines and transactions are avoided on purpose: these shapes work on every MongoDB
 * from 4.2 and on the wire-compatible stand-in used in tests. Expiry never depends on the optional
 * TTL index, whose monitor runs only about once a minute.
 *
 * <p>The driver is blocking, so every call runs on this node's small pool of worker threads and the
 * caller gets a {@link Reply} at once; a call the engine abandons before a worker takes it is never
 * sent.
 */
public final class MongoNode {
  private static final Logger LOG = LoggerFactory.getLogger(MongoNode.class);

  /** Field: the owner's token. */
  public static final String TOKEN = "token";

  /** Field: the TTL in milliseconds, as a 64-bit integer. */
  public static final String TTL_MS = "ttlMs";

  /** Field: when the key was last acquired or extended, on the server's clock. */
  public static final String AT = "at";

  /** Field: the fencing counter, a 64-bit integer; only on keys used with fencing. */
  public static final String FENCE = "fence";

  /** The name of the optional TTL index. */
  public static final String GC_INDEX = "redlock_gc";

  /**
   * The {@code ttlMs} of a released document that keeps its fencing counter: about 31 years in the
   * past, so that it counts as expired even if the server's clock steps back, while {@code at}
   * keeps the time of its last use for the TTL index.
   */
  public static final long RELEASED_TTL_MS = -1_000_000_000_000L;

  /**
   * Counters below this (10^15, i.e. server time in microseconds before September 2001) have not
   * been raised to the clock floor yet: they belong to a document that was just created or lost its
   * counter.
   */
  public static final long FENCE_FLOOR_MIN = 1_000_000_000_000_000L;

  private static final int QUEUE_CAPACITY = 1024;
  private static final AtomicInteger NODE_IDS = new AtomicInteger();

  // Binary comparison of keys and tokens even if the collection was created with a collation.
  private static final Collation SIMPLE = Collation.builder().locale("simple").build();
  private static final Document EXPIRY =
      new Document("$add", List.of("$" + AT, "$" + TTL_MS)); // a Date
  private static final Bson EXPIRED = expr(new Document("$lte", List.of(EXPIRY, "$$NOW")));
  private static final Bson LIVE = expr(new Document("$gt", List.of(EXPIRY, "$$NOW")));
  private static final UpdateOptions UPSERT = new UpdateOptions().upsert(true).collation(SIMPLE);
  private static final UpdateOptions UPDATE = new UpdateOptions().collation(SIMPLE);
  private static final DeleteOptions DELETE = new DeleteOptions().collation(SIMPLE);
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
  private static final NodeCapabilities CAPABILITIES =
      NodeCapabilities.millisecondPrecision()
          .withFencing()
          .withStatus()
          .withClock()
          .withInspection();

  private final MongoNodeSettings settings;
  private final String name;
  private final MongoClient client;
  private final boolean ownsClient;
  private final MongoCollection<Document> collection;
  private final ThreadPoolExecutor workers;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicBoolean gcIndexPending = new AtomicBoolean();
  private final StatusReader statusReader;
  private volatile boolean gcIndexDone;

  /** Set once this node has seen a fenced key: release then tries keeping the document first. */
  private volatile boolean fencingSeen;

  /**
   * A node over {@code client}. Connects lazily: nothing is sent before the first call (apart from
   * the TTL index, which is created in the background when {@code gcAfter} is set).
   *
   * @param ownsClient whether {@link #close()} closes the client
   * @param watch the connections of the client, if this node created it (and so could register a
   *     listener), else null: status reports are then read from the server every time
   */
  public MongoNode(
      MongoClient client, boolean ownsClient, MongoNodeSettings settings, ConnectionWatch watch) {
    this.client = Objects.requireNonNull(client, "client");
    this.ownsClient = ownsClient;
    this.settings = Objects.requireNonNull(settings, "settings");
    this.name = settings.name();
    this.collection =
        client
            .getDatabase(settings.database())
            .getCollection(settings.collection())
            .withWriteConcern(settings.writeConcern())
            .withReadPreference(ReadPreference.primary());
    this.statusReader = new StatusReader(name, client, collection, settings, watch);
    int id = NODE_IDS.incrementAndGet();
    AtomicInteger threadIds = new AtomicInteger();
    ThreadFactory threads =
        r -> {
          Thread t = new Thread(r, "redlock-mongo-" + id + "-" + threadIds.incrementAndGet());
          t.setDaemon(true);
          return t;
        };
    this.workers =
        new ThreadPoolExecutor(
            settings.threads(),
            settings.threads(),
            30,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(QUEUE_CAPACITY),
            threads);
    workers.allowCoreThreadTimeOut(true);
    if (settings.gcAfter() != null) {
      scheduleGcIndex();
    }
  }

  /** The node's name: its connection string, redacted. */
  public String name() {
    return name;
  }

  /** The settings in force. */
  public MongoNodeSettings settings() {
    return settings;
  }

  /** Millisecond precision (MongoDB dates count milliseconds), fencing, status and clock reads. */
  public NodeCapabilities capabilities() {
    return CAPABILITIES;
  }

  /** Conditional insert with expiry on the server's clock. */
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    long ttlMs = ttlMillis(ttl);
    return submit("tryAcquire", () -> acquire(key, token, ttlMs));
  }

  /**
   * Compare-and-delete. A document without a fencing counter is deleted; one with a counter is kept
   * (the counter must survive) and marked released. The two shapes are tried in turn, each one
   * atomic and guarded by token and liveness, so exactly one can match a live key holding the
   * token; the one this node more likely needs goes first.
   */
  public Reply<Boolean> release(String key, String token) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    return submit(
        "release",
        () -> {
          if (fencingSeen) {
            return keepReleased(key, token) || deleteReleased(key, token);
          }
          return deleteReleased(key, token) || keepReleased(key, token);
        });
  }

  private boolean deleteReleased(String key, String token) {
    return collection
            .deleteOne(and(eq("_id", key), eq(TOKEN, token), LIVE, exists(FENCE, false)), DELETE)
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
    if (kept) {
      fencingSeen = true;
    }
    return kept;
  }

  /** Compare-and-extend: the new expiry is the server's now plus {@code ttl}. */
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    long ttlMs = ttlMillis(ttl);
    return submit(
        "extend",
        () ->
            collection
                    .updateOne(
                        and(eq("_id", key), eq(TOKEN, token), LIVE),
                        Updates.combine(Updates.set(TTL_MS, ttlMs), Updates.currentDate(AT)),
                        UPDATE)
                    .getMatchedCount()
                == 1);
  }

  /**
   * Conditional insert with expiry that increments the key's fencing counter in the same atomic
   * write and returns it.
   *
   * <p>A counter that starts afresh (the document was created now, or had none, or lost it) comes
   * back below {@link #FENCE_FLOOR_MIN}; it is then raised to the floor {@code at × 1000 +
   * counter}, where {@code at} is the server's time of this acquisition in milliseconds, by a
   * second write guarded by this token. Until that second write nobody else can see the low value:
   * it is not returned, {@code raiseFence} needs this token, and another acquisition can only come
   * after this one expired, in which case it replaces the token, this guard fails and this call
   * answers "held" (its key is gone anyway) while the later acquisition raises the counter itself.
   * Keys already floored (every later acquisition) take one write.
   */
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    long ttlMs = ttlMillis(ttl);
    fencingSeen = true;
    return submit("tryAcquireFenced", () -> acquireFenced(key, token, ttlMs));
  }

  /**
   * If the key holds the token and is live, raises its counter to at least {@code atLeast} ({@code
   * $max}, which never lowers it); the token and expiry stay as they are.
   */
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
    if (atLeast <= 0) {
      throw new IllegalArgumentException(
          "raiseFence needs a positive fencing counter value, got " + atLeast);
    }
    fencingSeen = true;
    return submit(
        "raiseFence",
        () ->
            collection
                    .updateOne(
                        and(eq("_id", key), eq(TOKEN, token), LIVE),
                        Updates.max(FENCE, atLeast),
                        UPDATE)
                    .getMatchedCount()
                == 1);
  }

  /**
   * Who holds {@code key}: the live document's token, and its expiry less the primary's clock
   * ({@code hello.localTime}, read right after; the document is found by the server's own clock).
   */
  public Reply<Optional<KeyHolder>> inspect(String key) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    return submit(
        "inspect",
        () -> {
          Document live = collection.find(and(eq("_id", key), LIVE)).collation(SIMPLE).first();
          if (live == null || !(live.get(TOKEN) instanceof String token)) {
            return Optional.empty();
          }
          long expiry = live.getDate(AT).getTime() + ((Number) live.get(TTL_MS)).longValue();
          long now = statusReader.serverTime().toEpochMilli();
          return Optional.of(new KeyHolder(token, Duration.ofMillis(Math.max(0, expiry - now))));
        });
  }

  /**
   * The primary's clock, {@code hello.localTime} (1 ms), asked afresh on every call on the node's
   * workers.
   */
  public Reply<java.time.Instant> serverTime() {
    requireOpen();
    return submit("serverTime", statusReader::serverTime);
  }

  /** The deployment's incarnation, uptime and durability; from the cache while it is fresh. */
  public Reply<NodeStatus> status() {
    requireOpen();
    Optional<NodeStatus> cached = statusReader.fromCache();
    if (cached.isPresent()) {
      return Reply.of(cached.get());
    }
    return submit("status", statusReader::read);
  }

  private AcquireResult acquireFenced(String key, String token, long ttlMs) {
    Document after;
    try {
      after =
          collection.findOneAndUpdate(
              and(eq("_id", key), EXPIRED),
              Updates.combine(
                  Updates.set(TOKEN, token),
                  Updates.set(TTL_MS, ttlMs),
                  Updates.currentDate(AT),
                  Updates.inc(FENCE, 1L)),
              FENCED_UPSERT);
    } catch (RuntimeException e) {
      if (MongoErrors.isDuplicateKey(e)) {
        return AcquireResult.HELD; // a live document has this _id
      }
      throw e;
    }
    if (after == null || !(after.get(AT) instanceof Date at)) {
      throw new RedlockNonTransientException(
          name,
          "tryAcquireFenced got an impossible answer from the server (an upsert with"
              + " returnDocument AFTER returned "
              + after
              + "); is this a MongoDB-compatible server that supports findAndModify with upsert?",
          null);
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
    if (floored == null) {
      return AcquireResult.HELD; // expired and taken by a later acquisition in between
    }
    return AcquireResult.acquired(fence(floored));
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
            + settings.database()
            + "."
            + settings.collection()
            + " is out of range ("
            + value
            + "); fencing counters are positive 64-bit integers far below 2^63: was the document"
            + " changed by hand, or a counter raised close to the limit?",
        cause);
  }

  private AcquireResult acquire(String key, String token, long ttlMs) {
    UpdateResult result;
    try {
      result =
          collection.updateOne(
              and(eq("_id", key), EXPIRED),
              Updates.combine(
                  Updates.set(TOKEN, token), Updates.set(TTL_MS, ttlMs), Updates.currentDate(AT)),
              UPSERT);
    } catch (RuntimeException e) {
      if (MongoErrors.isDuplicateKey(e)) {
        return AcquireResult.HELD; // a live document has this _id
      }
      throw e;
    }
    if (result.getUpsertedId() != null || result.getMatchedCount() == 1) {
      return AcquireResult.ACQUIRED;
    }
    throw new RedlockNonTransientException(
        name,
        "tryAcquire got an impossible answer from the server (an upsert that neither matched nor"
            + " inserted: "
            + result
            + "); is this a MongoDB-compatible server that supports upsert with $expr?",
        null);
  }

  private <T> Reply<T> submit(String operation, Supplier<T> call) {
    if (!gcIndexDone && settings.gcAfter() != null) {
      scheduleGcIndex(); // a previous attempt failed; try again in the background
    }
    Supplier<T> translated =
        () -> {
          try {
            return call.get();
          } catch (RuntimeException e) {
            throw MongoErrors.translate(e, name, operation, settings);
          }
        };
    // a call the engine abandons before a worker takes it is never sent, except a release (see
    // Reply.abandon)
    return Replies.supplyAsync(translated, workers, name, !"release".equals(operation));
  }

  /**
   * The TTL in whole milliseconds, rounded up: a key must never expire before the client thinks.
   */
  private long ttlMillis(Duration ttl) {
    LockNodeArguments.requireTtl(ttl, capabilities());
    if (settings.gcAfter() != null && ttl.compareTo(settings.gcAfter()) > 0) {
      throw new IllegalArgumentException(
          "ttl "
              + ttl
              + " is longer than this node's gcAfter of "
              + settings.gcAfter()
              + ": the TTL index would delete the lock before it expires; raise redlock.gcAfter"
              + " or use a shorter TTL");
    }
    try {
      long millis = ttl.toMillis();
      return ttl.minusMillis(millis).isZero() ? millis : Math.addExact(millis, 1);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          "ttl " + ttl + " is too long to count in milliseconds; use a shorter TTL", e);
    }
  }

  /** Creates the TTL index in the background, once at a time, until it succeeds. */
  private void scheduleGcIndex() {
    if (gcIndexDone || !gcIndexPending.compareAndSet(false, true)) {
      return;
    }
    try {
      workers.execute(this::createGcIndex);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      gcIndexPending.set(false); // closed or busy: the next call tries again
    }
  }

  private void createGcIndex() {
    try {
      collection.createIndex(
          Indexes.ascending(AT),
          new IndexOptions()
              .name(GC_INDEX)
              .expireAfter(settings.gcAfter().toSeconds(), TimeUnit.SECONDS));
      gcIndexDone = true;
    } catch (RuntimeException e) {
      RedlockException failure = MongoErrors.translate(e, name, "creating the TTL index", settings);
      if (failure instanceof RedlockTransientException) {
        LOG.debug("{}; will try again with the next call", failure.getMessage());
      } else {
        // e.g. an index of that name with other options, or no createIndex privilege: locking
        // works without it, so say so once and stop trying.
        gcIndexDone = true;
        LOG.warn(
            "{}. Locks still work (expiry never depends on this index) but abandoned lock"
                + " documents are not removed; create a TTL index on '{}' yourself or drop index"
                + " '{}'",
            failure.getMessage(),
            AT,
            GC_INDEX);
      }
    } finally {
      gcIndexPending.set(false);
    }
  }

  /** True once the TTL index exists (or creating it failed for good). For tests. */
  public boolean gcIndexSettled() {
    return gcIndexDone;
  }

  private void requireOpen() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed; create a new lock node");
    }
  }

  /**
   * Stops the workers (letting running calls finish for up to a second) and closes the client if
   * this node created it. Idempotent.
   */
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    workers.shutdown();
    try {
      workers.awaitTermination(1, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (ownsClient) {
      client.close();
    }
    workers.shutdownNow();
  }
}
