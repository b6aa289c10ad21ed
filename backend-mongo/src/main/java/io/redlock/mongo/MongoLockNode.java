package io.redlock.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.ReadPreference;
import com.mongodb.ServerAddress;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.connection.ClusterSettings;
import io.redlock.mongo.internal.ConnectionWatch;
import io.redlock.mongo.internal.MongoNode;
import io.redlock.mongo.internal.MongoNodeSettings;
import io.redlock.mongo.internal.MongoUri;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * One MongoDB deployment (a standalone server, a replica set or a sharded cluster) as a Redlock
 * node, over the official synchronous driver.
 *
 * <pre>{@code
 * LockNode a = MongoLockNode.fromUri("mongodb://10.0.0.5:27017/redlock");
 * LockNode b = MongoLockNode.fromUri(
 *     "mongodb+srv://app:s3cret@cluster0.example.net/?redlock.collection=locks&w=majority");
 * LockNode c = MongoLockNode.builder().client(myMongoClient).database("app").build(); // not closed
 * }</pre>
 *
 * <h2>Connection string</h2>
 *
 * A standard {@code mongodb://} or {@code mongodb+srv://} connection string: every driver option
 * works ({@code replicaSet}, {@code tls}, {@code authSource}, {@code w}, {@code journal}, {@code
 * wtimeoutMS}, {@code serverSelectionTimeoutMS}, {@code connectTimeoutMS}, {@code socketTimeoutMS},
 * {@code timeoutMS}, ...). This library's own options start with {@code redlock.} and are taken out
 * before the driver sees the string (an unknown one is an error):
 *
 * <ul>
 *   <li>{@code redlock.database}: the database (default: the one in the path, else {@value
 *       #DEFAULT_DATABASE});
 *   <li>{@code redlock.collection}: the collection (default {@value #DEFAULT_COLLECTION});
 *   <li>{@code redlock.gcAfter}: if set, a TTL index removes lock documents this long after they
 *       were last acquired or extended, and TTLs longer than this are rejected (default: no index);
 *       this includes released documents that keep a fencing counter (see below);
 *   <li>{@code redlock.threads}: worker threads that run the blocking driver calls (default {@value
 *       #DEFAULT_THREADS}).
 * </ul>
 *
 * Durations are milliseconds ({@code 500}) or carry a unit ({@code 500ms}, {@code 90s}, {@code
 * 30m}, {@code 24h}, {@code 7d}, {@code PT24H}).
 *
 * <h2>Defaults that differ from the driver's</h2>
 *
 * <ul>
 *   <li>write concern {@code {w: "majority", j: true}} unless the connection string sets {@code w}
 *       or {@code journal} (or {@link Builder#writeConcern} is called): a lock acknowledged by one
 *       member only could be lost in a failover. {@code w=0} is refused.
 *   <li>reads and writes always go to the primary, whatever {@code readPreference} says.
 *   <li>{@code serverSelectionTimeoutMS=2000}, {@code connectTimeoutMS=2000} and {@code
 *       socketTimeoutMS=5000} unless set in the connection string (or {@code timeoutMS} is set,
 *       which then bounds each operation): a lock node must fail fast rather than wait 30 s.
 *   <li>{@code appName=redlock} unless set.
 * </ul>
 *
 * <h2>Behaviour</h2>
 *
 * One document per key, {@code {_id: key, token, ttlMs, at}}. Expiry runs on the server's clock:
 * {@code at} is written by the server ({@code $currentDate}) and a document counts as absent once
 * {@code at + ttlMs <= $$NOW}, checked inside each operation's filter, so it never depends on the
 * TTL index (whose monitor runs about once a minute). Acquire is one {@code updateOne} with {@code
 * upsert} whose filter matches only an expired document; when a live one exists the insert collides
 * on {@code _id} (duplicate key, error 11000), which means "held". Release and extend are single
 * {@code deleteOne} / {@code updateOne} calls guarded by {@code _id}, token and liveness (release
 * of a key with a fencing counter may take two: see below). Keys and tokens are compared byte for
 * byte (simple collation). Needs MongoDB 4.2 or later.
 *
 * <h2>Fencing counters</h2>
 *
 * A key used with {@link #tryAcquireFenced} gets a field {@code fence}, a 64-bit counter that
 * {@code tryAcquireFenced} increments ({@code $inc}) in the same single-document write that takes
 * the key, and returns. Release then keeps the document (token removed, marked expired) so the
 * counter survives release and expiry; documents without a counter are still deleted. {@link
 * #raiseFence} is one {@code $max} guarded by key, token and liveness. A counter that starts afresh
 * (the key's first fenced acquisition, or after its document was lost) is raised once, by a second
 * write guarded by the caller's token, to {@code at × 1000 + counter}: the server's time of the
 * acquisition in microseconds. What is guaranteed, on one node, for one key:
 *
 * <ul>
 *   <li>while the key's document exists, every fence returned is greater than every fence returned
 *       before and every value it was raised to: the counter only grows, by {@code $inc} and {@code
 *       $max}, and the low value of a fresh counter is never returned;
 *   <li>if the document is lost (a TTL index from {@code redlock.gcAfter} removes it {@code
 *       gcAfter} after its last acquisition or extension; a restart of a deployment whose writes
 *       are not durable; a rollback after a failover with {@code w=1}; a manual delete), the next
 *       fence still exceeds every earlier one provided the server's clock has not gone back since
 *       those were handed out and the values written back from other nodes were not ahead of this
 *       server's clock by more than the time since (a lost document is at least {@code gcAfter}
 *       old, and with restart quarantine a restarted node votes again only after the maximum TTL),
 *       and fewer than 1000 fenced acquisitions of the key happened per millisecond;
 *   <li>with {@code gcAfter} set, counters of keys unused for longer than {@code gcAfter} therefore
 *       rest on the server's clock; leave {@code gcAfter} unset (the default) to keep them for
 *       good.
 * </ul>
 *
 * <h2>Status</h2>
 *
 * {@link #status()} reports the deployment's incarnation, uptime and durability, for restart
 * quarantine. The incarnation is MongoDB 4.4+'s {@code hello.topologyVersion.processId}, made when
 * the server process starts; older servers (and the test stand-in) get a marker document in the
 * lock collection, {@code {_id: {redlock: "incarnation"}}}, that is lost with the data and replaced
 * when {@code serverStatus} shows a restart. The uptime is {@code serverStatus.uptimeMillis} (or
 * the age of the process id, rounded down). Durable means an acknowledged lock survives a crash,
 * restart or failover: a persistent storage engine ({@code serverStatus.storageEngine.persistent})
 * and a journaled write concern that a failover cannot roll back: {@code journal=true} (or {@code
 * w=majority} on MongoDB 6.1+) on a standalone, {@code w=majority} with journaling (explicit or by
 * {@code writeConcernMajorityJournalDefault}) on a replica set, {@code {w: majority, journal:
 * true}} through mongos (shards taken to be persistent). The default write concern qualifies. The
 * user needs the {@code clusterMonitor} role (for {@code serverStatus}) for a "durable" answer;
 * without it the node reports not durable and says why in {@link NodeStatus#details()}. A node
 * created from a connection string caches the status until its client opens a new connection or the
 * primary changes; a node over a client passed in asks the server each time.
 *
 * <p>Failures are {@link io.redlock.RedlockTransientException}s (unreachable, timed out, not
 * primary during a failover, write not confirmed by the write concern) or {@link
 * io.redlock.RedlockNonTransientException}s (authentication, missing privileges, a write concern
 * the deployment cannot satisfy, a server older than 4.2), each naming the node and the fix.
 * Passwords never appear in {@link #name()}, {@link #toString()} or messages.
 *
 * <p>Thread-safe. Opening a node does not contact the server. {@link #close()} closes the client
 * only if this node created it.
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

  private static final int DEFAULT_SERVER_SELECTION_TIMEOUT_MS = 2000;
  private static final int DEFAULT_CONNECT_TIMEOUT_MS = 2000;
  private static final int DEFAULT_SOCKET_TIMEOUT_MS = 5000;

  private final MongoNode node;

  private MongoLockNode(MongoNode node) {
    this.node = node;
  }

  /**
   * A node for a {@code mongodb://} or {@code mongodb+srv://} connection string.
   *
   * @throws IllegalArgumentException for a malformed connection string or an unknown or invalid
   *     option
   */
  public static MongoLockNode fromUri(String connectionString) {
    return builder().uri(connectionString).build();
  }

  /** A node for a parsed URI (as the {@link io.redlock.spi.LockNodeProvider} receives it). */
  public static MongoLockNode fromUri(NodeUri uri) {
    return fromUri(Objects.requireNonNull(uri, "uri").raw());
  }

  /** A builder; start from {@link Builder#uri} or {@link Builder#client}. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String name() {
    return node.name();
  }

  @Override
  public NodeCapabilities capabilities() {
    return node.capabilities();
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    return node.tryAcquire(key, token, ttl);
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    return node.release(key, token);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    return node.extend(key, token, ttl);
  }

  /**
   * Conditional insert that also increments the key's fencing counter, in the same atomic write.
   * See "Fencing counters" above for what is guaranteed.
   */
  @Override
  public Reply<AcquireResult> tryAcquireFenced(String key, String token, Duration ttl) {
    return node.tryAcquireFenced(key, token, ttl);
  }

  /** If the key holds the token and is live, raises its fencing counter to at least a value. */
  @Override
  public Reply<Boolean> raiseFence(String key, String token, long atLeast) {
    return node.raiseFence(key, token, atLeast);
  }

  /** The deployment's incarnation, uptime and durability; see "Status" above. */
  @Override
  public Reply<NodeStatus> status() {
    return node.status();
  }

  /** Who holds {@code key}: the live document's token and its expiry less the server's clock. */
  @Override
  public Reply<java.util.Optional<io.redlock.spi.KeyHolder>> inspect(String key) {
    return node.inspect(key);
  }

  /**
   * The primary's clock: {@code localTime} of the {@code hello} command ({@code isMaster} on
   * servers before 4.4.2 and on the mongo-java-server stand-in, which answers its own JVM's clock),
   * asked afresh on every call, with millisecond resolution; for diagnostics such as {@code redlock
   * doctor}'s clock offset. No privilege is needed.
   */
  @Override
  public Reply<java.time.Instant> serverTime() {
    return node.serverTime();
  }

  /** The database holding the lock collection. */
  public String database() {
    return node.settings().database();
  }

  /** The lock collection. */
  public String collection() {
    return node.settings().collection();
  }

  /** The write concern of every lock operation. */
  public WriteConcern writeConcern() {
    return node.settings().writeConcern();
  }

  /** Closes the client if this node created it, and stops the worker threads. Idempotent. */
  @Override
  public void close() {
    node.close();
  }

  /** Same as {@link #name()}: the connection string without secrets. */
  @Override
  public String toString() {
    return node.name();
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

    /**
     * The connection string, with optional {@code redlock.*} options (see {@link MongoLockNode}).
     * The node creates its own {@code MongoClient} and closes it on {@link #close()}.
     *
     * @throws IllegalArgumentException if it is not a MongoDB connection string or names an unknown
     *     {@code redlock.*} option
     */
    public Builder uri(String connectionString) {
      this.uri = MongoUri.parse(connectionString);
      return this;
    }

    /**
     * A client you created and keep owning: the node uses it and never closes it. Instead of {@link
     * #uri}.
     */
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
     * Creates a TTL index that removes lock documents {@code gcAfter} after they were last acquired
     * or extended, or none if {@code null} (the default). Only garbage collection: expiry never
     * depends on it. TTLs longer than {@code gcAfter} are then rejected. Documents that keep a
     * fencing counter are removed too, {@code gcAfter} after their last use; their counter then
     * starts again from the server's clock (see "Fencing counters" in {@link MongoLockNode}).
     */
    public Builder gcAfter(Duration gcAfter) {
      this.gcAfter = gcAfter;
      this.gcAfterSet = true;
      return this;
    }

    /**
     * Worker threads that run the blocking driver calls (default {@value
     * MongoLockNode#DEFAULT_THREADS}).
     */
    public Builder threads(int threads) {
      this.threads = threads;
      return this;
    }

    /**
     * Adjusts the driver settings of the client this node creates from the connection string (TLS
     * context, command listeners, ...), after the connection string and the defaults are applied.
     * Not allowed together with {@link #client}.
     */
    public Builder clientSettings(Consumer<MongoClientSettings.Builder> customizer) {
      this.clientSettings = Objects.requireNonNull(customizer, "customizer must not be null");
      return this;
    }

    /**
     * Builds the node. Does not contact the server.
     *
     * @throws IllegalStateException if neither or both of {@link #uri} and {@link #client} were
     *     given, or {@link #clientSettings} was given with a client
     * @throws IllegalArgumentException for an invalid setting or connection string
     */
    public MongoLockNode build() {
      if ((uri == null) == (client == null)) {
        throw new IllegalStateException(
            "give exactly one of uri(\"mongodb://...\") and client(mongoClient)"
                + (uri == null ? "" : ", not both"));
      }
      return new MongoLockNode(uri != null ? fromUri() : fromClient());
    }

    private MongoNode fromUri() {
      ConnectionString cs;
      try {
        cs = new ConnectionString(uri.driverUri());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "invalid MongoDB connection string "
                + uri.redacted()
                + ": "
                + MongoUri.redact(String.valueOf(e.getMessage())),
            e);
      }
      Map<String, String> options = uri.options();
      String db =
          first(database, options.get(MongoUri.DATABASE), cs.getDatabase(), DEFAULT_DATABASE);
      String coll =
          first(
              collection, options.get(MongoUri.COLLECTION), cs.getCollection(), DEFAULT_COLLECTION);
      WriteConcern wc = first(writeConcern, cs.getWriteConcern(), DEFAULT_WRITE_CONCERN);
      Duration gc =
          gcAfterSet
              ? gcAfter
              : options.containsKey(MongoUri.GC_AFTER)
                  ? duration("redlock.gcAfter", options.get(MongoUri.GC_AFTER))
                  : null;
      int workers =
          threads != null
              ? threads
              : options.containsKey(MongoUri.THREADS)
                  ? integer("redlock.threads", options.get(MongoUri.THREADS))
                  : DEFAULT_THREADS;
      MongoNodeSettings settings = new MongoNodeSettings(uri.redacted(), db, coll, wc, gc, workers);

      ConnectionWatch watch = new ConnectionWatch();
      MongoClientSettings.Builder driver =
          MongoClientSettings.builder()
              .applyToConnectionPoolSettings(p -> p.addConnectionPoolListener(watch))
              .applyToClusterSettings(
                  c ->
                      c.serverSelectionTimeout(
                          DEFAULT_SERVER_SELECTION_TIMEOUT_MS, TimeUnit.MILLISECONDS))
              .applyToSocketSettings(
                  s -> {
                    s.connectTimeout(DEFAULT_CONNECT_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                    if (cs.getTimeout() == null) {
                      s.readTimeout(DEFAULT_SOCKET_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                    }
                  })
              .applicationName("redlock")
              .applyConnectionString(cs) // the user's options win over the defaults above
              .readPreference(ReadPreference.primary())
              .writeConcern(wc);
      if (clientSettings != null) {
        clientSettings.accept(driver);
      }
      MongoClient created = MongoClients.create(driver.build());
      return new MongoNode(created, true, settings, watch);
    }

    private MongoNode fromClient() {
      if (clientSettings != null) {
        throw new IllegalStateException(
            "clientSettings(...) applies only to a node built from uri(...); configure your own"
                + " MongoClient directly");
      }
      String db = database != null ? database : DEFAULT_DATABASE;
      String coll = collection != null ? collection : DEFAULT_COLLECTION;
      WriteConcern wc = writeConcern != null ? writeConcern : DEFAULT_WRITE_CONCERN;
      int workers = threads != null ? threads : DEFAULT_THREADS;
      String name = clientName(client, db, coll);
      MongoNodeSettings settings =
          new MongoNodeSettings(name, db, coll, wc, gcAfterSet ? gcAfter : null, workers);
      return new MongoNode(client, false, settings, null);
    }

    /** E.g. {@code mongodb://h1:27017,h2:27017/redlock?redlock.collection=locks}. */
    private static String clientName(MongoClient client, String db, String coll) {
      ClusterSettings cluster = client.getClusterDescription().getClusterSettings();
      String hosts =
          cluster.getSrvHost() != null
              ? "mongodb+srv://" + cluster.getSrvHost()
              : "mongodb://"
                  + cluster.getHosts().stream()
                      .map(ServerAddress::toString)
                      .collect(Collectors.joining(","));
      return hosts + "/" + db + "?redlock.collection=" + coll;
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

    private static final Pattern WITH_UNIT = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)");

    /** Milliseconds, a number with a unit, or ISO-8601. */
    static Duration duration(String option, String value) {
      String v = value.strip().toLowerCase(Locale.ROOT);
      try {
        if (v.matches("\\d+")) {
          return Duration.ofMillis(Long.parseLong(v));
        }
        Matcher m = WITH_UNIT.matcher(v);
        if (m.matches()) {
          long n = Long.parseLong(m.group(1));
          return switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofDays(n);
          };
        }
        return Duration.parse(value.strip().toUpperCase(Locale.ROOT));
      } catch (DateTimeParseException | ArithmeticException | NumberFormatException e) {
        throw new IllegalArgumentException(
            option
                + "='"
                + value
                + "' is not a duration; write milliseconds (86400000), a number with a unit"
                + " (90s, 30m, 24h, 7d) or ISO-8601 (PT24H)",
            e);
      }
    }

    private static int integer(String option, String value) {
      try {
        return Integer.parseInt(value.strip());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            option + "='" + value + "' is not a whole number, e.g. " + option + "=8", e);
      }
    }
  }
}
