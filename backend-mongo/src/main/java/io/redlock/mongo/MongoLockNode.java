package io.redlock.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.MongoNamespace;
import com.mongodb.ReadPreference;
import com.mongodb.ServerAddress;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoCollection;
import com.mongodb.connection.ClusterSettings;
import io.redlock.mongo.internal.MongoErrors;
import io.redlock.mongo.internal.MongoUri;
import io.redlock.mongo.internal.StatusReader;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.spi.support.Replies;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.bson.Document;

/**
 * One MongoDB deployment (a standalone server, a replica set or a sharded cluster) as a Redlock
 * node, over the official synchronous driver.
 *
 * <pre>{@code
 * LockNode a = MongoLockNode.fromUri("mongodb+srv://app:s3cret@cluster0.example.net/?w=majority");
 * LockNode b = MongoLockNode.builder().client(myMongoClient).database("app").build(); // not closed
 * }</pre>
 *
 * <p>Every driver option of the connection string works; this library's {@code redlock.*} options
 * (the {@link Builder}'s) are taken out before the driver sees it. One document per key, {@code
 * {_id: key, token, ttlMs, at}}, live while {@code at + ttlMs > $$NOW} on the server's clock; every
 * operation is one single-document write (MongoDB 4.2+). Defaults, fencing counters and status: see
 * {@code docs/backends.md}. Calls run on the node's worker threads; a call abandoned before a
 * worker takes it is never sent. Thread-safe; {@link #close()} closes only a client it created.
 */
public final class MongoLockNode implements LockNode {
  /** The database used when neither the connection string nor the builder names one. */
  public static final String DEFAULT_DATABASE = "redlock";

  /** The collection used unless another is configured. */
  public static final String DEFAULT_COLLECTION = "locks";

  /** Worker threads per node unless configured. */
  public static final int DEFAULT_THREADS = 8;

  /** The default write concern: majority of the replica set, journaled. */
  public static final WriteConcern DEFAULT_WRITE_CONCERN = WriteConcern.MAJORITY.withJournal(true);

  private static final int MAX_THREADS = 256;
  private static final AtomicInteger NODE_IDS = new AtomicInteger();
  private static final NodeCapabilities CAPABILITIES =
      NodeCapabilities.millisecondPrecision()
          .withFencing()
          .withStatus()
          .withClock()
          .withInspection();

  private final String name;
  private final MongoClient client;
  private final boolean ownsClient;
  private final MongoCollection<Document> collection;
  private final Duration gcAfter;
  private final ThreadPoolExecutor workers;
  private final StatusReader statusReader;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicBoolean gcIndexPending = new AtomicBoolean();
  private volatile boolean gcIndexDone;
  private final LockDocuments documents;

  private MongoLockNode(
      String name,
      MongoClient client,
      boolean ownsClient,
      MongoNamespace namespace,
      WriteConcern writeConcern,
      Duration gcAfter,
      int threads,
      AtomicLong connections) {
    this.name = name;
    this.client = client;
    this.ownsClient = ownsClient;
    this.gcAfter = gcAfter;
    this.collection =
        client
            .getDatabase(namespace.getDatabaseName())
            .getCollection(namespace.getCollectionName())
            .withWriteConcern(writeConcern)
            .withReadPreference(ReadPreference.primary());
    this.documents = new LockDocuments(name, collection);
    this.statusReader =
        new StatusReader(name, client, collection, connections == null ? null : connections::get);
    this.workers =
        Replies.workers(
            "redlock-mongo-" + NODE_IDS.incrementAndGet() + "-",
            threads,
            1024,
            Duration.ofSeconds(30));
    if (gcAfter != null) {
      scheduleGcIndex();
    }
  }

  /** A node for a {@code mongodb://} or {@code mongodb+srv://} URI; a bad one is an error. */
  public static MongoLockNode fromUri(String connectionString) {
    return builder().uri(connectionString).build();
  }

  /** A builder; start from {@link Builder#uri} or {@link Builder#client}. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public NodeCapabilities capabilities() {
    return CAPABILITIES;
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    long ttlMs = checked(key, token, ttl);
    return submit("tryAcquire", () -> documents.acquire(key, token, ttlMs, false));
  }

  /** Compare-and-delete; a key with a fencing counter keeps its document, marked released. */
  @Override
  public Reply<Boolean> release(String key, String token) {
    checked(key, token);
    return submit("release", () -> documents.release(key, token));
  }

  /** Compare-and-extend: the new expiry is the server's now plus {@code ttl}. */
  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    long ttlMs = checked(key, token, ttl);
    return submit("extend", () -> documents.extend(key, token, ttlMs));
  }

  /** Conditional insert that also increments the key's fencing counter, in the same write. */
  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    long ttlMs = checked(key, token, ttl);
    return submit("tryAcquireFenced", () -> documents.acquire(key, token, ttlMs, true));
  }

  /** If the key holds the token and is live, raises its fencing counter to at least a value. */
  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    checked(key, token);
    LockNodeArguments.requireFence(atLeast);
    return submit("raiseFence", () -> documents.raiseFence(key, token, atLeast));
  }

  @Override
  public Reply<NodeStatus> status() {
    requireOpen();
    Optional<NodeStatus> cached = statusReader.fromCache();
    return cached.isPresent() ? Reply.of(cached.get()) : submit("status", statusReader::read);
  }

  /** The live document's token, and its expiry less the primary's clock. */
  @Override
  public Reply<Optional<KeyHolder>> inspect(String key) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    return submit(
        "inspect", () -> documents.holder(key, () -> statusReader.serverTime().toEpochMilli()));
  }

  /** The primary's clock: {@code hello.localTime}, asked afresh. */
  @Override
  public Reply<Instant> serverTime() {
    requireOpen();
    return submit("serverTime", statusReader::serverTime);
  }

  /** The database holding the lock collection. */
  public String database() {
    return collection.getNamespace().getDatabaseName();
  }

  /** The lock collection. */
  public String collection() {
    return collection.getNamespace().getCollectionName();
  }

  /** The write concern of every lock operation. */
  public WriteConcern writeConcern() {
    return collection.getWriteConcern();
  }

  /** Stops the workers (running calls get a second) and closes a client it created. */
  @Override
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

  /** Same as {@link #name()}: the connection string without secrets. */
  @Override
  public String toString() {
    return name;
  }

  private <T> Reply<T> submit(String operation, Supplier<T> call) {
    if (!gcIndexDone && gcAfter != null) {
      scheduleGcIndex(); // a previous attempt failed; try again in the background
    }
    Supplier<T> translated =
        () -> {
          try {
            return call.get();
          } catch (RuntimeException e) {
            throw MongoErrors.translate(e, name, operation, collection);
          }
        };
    // a call abandoned before a worker takes it is never sent, except a release (Reply.abandon)
    return Replies.supplyAsync(translated, workers, name, !"release".equals(operation));
  }

  /** Checks a call's arguments; the TTL in whole milliseconds, rounded up. */
  private long checked(String key, String token, Duration ttl) {
    checked(key, token);
    LockNodeArguments.requireTtl(ttl, CAPABILITIES);
    if (gcAfter != null && ttl.compareTo(gcAfter) > 0) {
      throw new IllegalArgumentException(
          "ttl "
              + ttl
              + " is longer than this node's gcAfter of "
              + gcAfter
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

  private void checked(String key, String token) {
    requireOpen();
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
  }

  private void requireOpen() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed; create a new lock node");
    }
  }

  /** Creates the TTL index in the background, one attempt at a time, until it succeeds. */
  private void scheduleGcIndex() {
    if (gcIndexDone || !gcIndexPending.compareAndSet(false, true)) {
      return;
    }
    try {
      workers.execute(this::createGcIndex);
    } catch (RejectedExecutionException e) {
      gcIndexPending.set(false); // closed or busy: the next call tries again
    }
  }

  private void createGcIndex() {
    try {
      gcIndexDone = documents.createGcIndex(gcAfter);
    } finally {
      gcIndexPending.set(false);
    }
  }

  /** Builds a {@link MongoLockNode}. Not thread-safe. */
  public static final class Builder {
    private MongoUri uri;
    private MongoClient client;
    private String database;
    private String collection;
    private WriteConcern writeConcern;
    private Duration gcAfter;
    private boolean gcAfterSet;
    private Integer threads;
    private Consumer<MongoClientSettings.Builder> clientSettings;

    private Builder() {}

    /** The connection string; the node creates its own client and closes it. */
    public Builder uri(String connectionString) {
      this.uri = MongoUri.parse(connectionString);
      return this;
    }

    /** Instead of {@link #uri}: a client you keep owning; the node never closes it. */
    public Builder client(MongoClient client) {
      this.client = Objects.requireNonNull(client, "client must not be null");
      return this;
    }

    /** The database holding the lock collection (overrides the connection string). */
    public Builder database(String database) {
      this.database = Objects.requireNonNull(database, "database must not be null");
      return this;
    }

    /** The lock collection (default {@value MongoLockNode#DEFAULT_COLLECTION}). */
    public Builder collection(String collection) {
      this.collection = Objects.requireNonNull(collection, "collection must not be null");
      return this;
    }

    /**
     * The write concern of lock operations (default {@code {w: "majority", j: true}}, or what the
     * connection string says). Must be acknowledged.
     */
    public Builder writeConcern(WriteConcern writeConcern) {
      this.writeConcern = Objects.requireNonNull(writeConcern, "writeConcern must not be null");
      return this;
    }

    /**
     * A TTL index removing lock documents (fencing counters included) this long after their last
     * acquisition or extension (default none); longer TTLs are then refused. Expiry never needs it.
     */
    public Builder gcAfter(Duration gcAfter) {
      this.gcAfter = gcAfter;
      this.gcAfterSet = true;
      return this;
    }

    /** Worker threads for the blocking driver calls (default 8). */
    public Builder threads(int threads) {
      this.threads = threads;
      return this;
    }

    /** Adjusts the driver settings of the client the node creates (TLS context, listeners). */
    public Builder clientSettings(Consumer<MongoClientSettings.Builder> customizer) {
      this.clientSettings = Objects.requireNonNull(customizer, "customizer must not be null");
      return this;
    }

    /** Builds the node without contacting the server. */
    public MongoLockNode build() {
      if ((uri == null) == (client == null)) {
        throw new IllegalStateException(
            "give exactly one of uri(\"mongodb://...\") and client(mongoClient)"
                + (uri == null ? "" : ", not both"));
      }
      if (client != null && clientSettings != null) {
        throw new IllegalStateException(
            "clientSettings(...) applies only to a node built from uri(...); configure your own"
                + " MongoClient directly");
      }
      ConnectionString cs = uri == null ? null : uri.connectionString();
      Map<String, String> options = uri == null ? Map.of() : uri.options();
      String db =
          first(
              database,
              options.get("database"),
              cs == null ? null : cs.getDatabase(),
              DEFAULT_DATABASE);
      String coll =
          first(
              collection,
              options.get("collection"),
              cs == null ? null : cs.getCollection(),
              DEFAULT_COLLECTION);
      MongoNamespace namespace = MongoUri.namespace(db, coll);
      WriteConcern wc =
          first(writeConcern, cs == null ? null : cs.getWriteConcern(), DEFAULT_WRITE_CONCERN);
      if (!wc.isAcknowledged()) {
        throw new IllegalArgumentException(
            "write concern w=0 is unacknowledged: the lock node could not tell 'acquired' from"
                + " 'held'; use w=majority (the default) or w=1");
      }
      Duration gc =
          gcAfterSet || !options.containsKey("gcafter")
              ? gcAfter
              : NodeUri.duration("redlock.gcAfter", options.get("gcafter"));
      if (gc != null && gc.compareTo(Duration.ofSeconds(1)) < 0) {
        throw new IllegalArgumentException(
            "gcAfter must be at least 1 second (MongoDB's TTL index counts whole seconds), got "
                + gc);
      }
      int workers =
          threads != null || !options.containsKey("threads")
              ? first(threads, DEFAULT_THREADS)
              : NodeUri.integer("redlock.threads", options.get("threads"), 1, MAX_THREADS);
      if (workers < 1 || workers > MAX_THREADS) {
        throw new IllegalArgumentException(
            "threads must be between 1 and " + MAX_THREADS + ", got " + workers);
      }
      if (client != null) {
        String name = clientName(client) + "/" + db + "?redlock.collection=" + coll;
        return new MongoLockNode(name, client, false, namespace, wc, gc, workers, null);
      }
      AtomicLong connections = new AtomicLong();
      MongoClient created = MongoUri.createClient(cs, wc, connections, clientSettings);
      return new MongoLockNode(
          uri.redacted(), created, true, namespace, wc, gc, workers, connections);
    }

    /** E.g. {@code mongodb://h1:27017,h2:27017}. */
    private static String clientName(MongoClient client) {
      ClusterSettings cluster = client.getClusterDescription().getClusterSettings();
      return cluster.getSrvHost() != null
          ? "mongodb+srv://" + cluster.getSrvHost()
          : "mongodb://"
              + cluster.getHosts().stream()
                  .map(ServerAddress::toString)
                  .collect(Collectors.joining(","));
    }

    @SafeVarargs
    private static <T> T first(T... candidates) {
      for (T c : candidates) {
        if (c != null) {
          return c;
        }
      }
      return null;
    }
  }
}
