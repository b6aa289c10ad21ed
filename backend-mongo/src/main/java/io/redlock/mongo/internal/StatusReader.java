package io.redlock.mongo.internal;

import static com.mongodb.client.model.Filters.and;
import static com.mongodb.client.model.Filters.eq;
import static com.mongodb.client.model.Filters.exists;

import com.mongodb.MongoCommandException;
import com.mongodb.ReadPreference;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoDatabase;
import com.mongodb.client.model.UpdateOptions;
import com.mongodb.client.model.Updates;
import com.mongodb.connection.ServerDescription;
import com.mongodb.connection.ServerType;
import io.redlock.RedlockNonTransientException;
import io.redlock.spi.NodeStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.LongSupplier;
import org.bson.Document;
import org.bson.types.ObjectId;

/**
 * Reads and caches the status of the deployment behind a node. The incarnation is {@code
 * hello.topologyVersion.processId} (4.4+), else a marker document {@code {_id: {redlock:
 * "incarnation"}, id, since}} in the lock collection, replaced when the server's uptime is shorter
 * than its age. A node with its own client caches the status until the client opens a new
 * connection or the writable servers change (a restarted server is reached only so); over a client
 * passed in, every status asks the server.
 */
public final class StatusReader {
  private static final Document MARKER_ID = new Document("redlock", "incarnation");
  private static final String MARKER_UUID = "id";
  private static final String MARKER_SINCE = "since";
  private static final int COMMAND_NOT_FOUND = 59;
  private static final int UNAUTHORIZED = 13;
  private static final long RESTART_SLACK_MS = 2000;
  private static final int MARKER_ATTEMPTS = 3;

  private final String name;
  private final MongoClient client;
  private final MongoCollection<Document> locks;
  private final LongSupplier watch;
  private volatile Cached cached;
  private volatile boolean useIsMaster;

  private record Cached(NodeStatus status, long receivedAtNanos, long generation, String servers) {}

  /** {@code watch} counts the connections of the node's own client; null: no cache. */
  public StatusReader(
      String name, MongoClient client, MongoCollection<Document> locks, LongSupplier watch) {
    this.name = name;
    this.client = client;
    this.locks = locks;
    this.watch = watch;
  }

  /** The cached status, if it is still known to describe the current server process. */
  public Optional<NodeStatus> fromCache() {
    Cached c = cached;
    if (c == null || watch == null) {
      return Optional.empty();
    }
    if (c.generation() != watch.getAsLong() || !c.servers().equals(writableServers())) {
      return Optional.empty();
    }
    NodeStatus s = c.status();
    Duration uptime = s.uptime().plusNanos(Math.max(0, System.nanoTime() - c.receivedAtNanos()));
    return Optional.of(new NodeStatus(s.incarnation(), uptime, s.durable(), s.details()));
  }

  /** Asks the server (blocking), caches and returns the answer. */
  public NodeStatus read() {
    // Read the cache keys before asking, so that a change while asking invalidates the answer.
    long generation = watch == null ? 0 : watch.getAsLong();
    String servers = writableServers();
    MongoDatabase admin = client.getDatabase("admin");
    Document hello = hello(admin);
    Document serverStatus = serverStatus(admin);
    MongoStatus.Topology topology = MongoStatus.Topology.of(hello);
    Boolean majorityJournalDefault =
        MongoStatus.needsMajorityJournalDefault(hello, locks.getWriteConcern())
            ? majorityJournalDefault(admin)
            : null;
    MongoStatus.Durability durability =
        MongoStatus.durability(
            hello, serverStatus, locks.getWriteConcern(), majorityJournalDefault);

    Map<String, String> details = new LinkedHashMap<>();
    details.put("topology", topology.describe(hello));
    String version = serverStatus != null ? serverStatus.getString("version") : version(admin);
    details.put("version", version == null ? "unknown" : version);
    if (serverStatus != null) {
      put(details, "process", serverStatus.get("process"));
      put(details, "host", serverStatus.get("host"));
      put(details, "pid", serverStatus.get("pid"));
      if (serverStatus.get("storageEngine") instanceof Document engine) {
        details.put(
            "storageEngine",
            engine.get("name")
                + (Boolean.TRUE.equals(engine.get("persistent")) ? "" : " (memory)"));
      } else {
        details.put("storageEngine", "not reported");
      }
    } else {
      put(details, "host", hello.get("me"));
      details.put("serverStatus", "not permitted for this user (grant clusterMonitor)");
    }
    put(details, "replicaSet", hello.get("setName"));
    details.put("writeConcern", MongoStatus.describe(locks.getWriteConcern()));
    details.put("durability", durability.reason());
    details.put(
        "statusCache",
        watch == null
            ? "none: a client passed in, so every status asks the server"
            : "until the client opens a new connection or the primary changes");

    String incarnation;
    Duration uptime;
    ObjectId processId = MongoStatus.processId(hello);
    if (processId != null) {
      incarnation =
          (topology == MongoStatus.Topology.SHARDED ? "mongos" : "mongod")
              + " process "
              + processId.toHexString();
      Duration reported = MongoStatus.uptime(hello, serverStatus);
      uptime = reported == null ? Duration.ZERO : reported; // unknown: round down to nothing
      details.put("incarnationFrom", "hello.topologyVersion.processId");
    } else {
      if (serverStatus == null || !(serverStatus.get("uptimeMillis") instanceof Number)) {
        throw new RedlockNonTransientException(
            name,
            "status: this server names no process in hello (MongoDB before 4.4) and does not let"
                + " this user run serverStatus, so a restart cannot be told; grant the user the"
                + " clusterMonitor role on admin, or use MongoDB 4.4 or later",
            null);
      }
      long serverUptimeMs = ((Number) serverStatus.get("uptimeMillis")).longValue();
      Marker marker = marker(serverUptimeMs);
      incarnation =
          "pid "
              + serverStatus.get("pid")
              + " on "
              + serverStatus.get("host")
              + ", lock data "
              + marker.id();
      uptime = Duration.ofMillis(Math.max(0, Math.min(serverUptimeMs, marker.ageMs())));
      details.put(
          "incarnationFrom",
          "lock-data marker in "
              + locks.getNamespace().getFullName()
              + " (no topologyVersion.processId in hello)");
    }
    NodeStatus status = new NodeStatus(incarnation, uptime, durability.durable(), details);
    if (watch != null) {
      cached = new Cached(status, System.nanoTime(), generation, servers);
    }
    return status;
  }

  /** The server's clock: {@code hello.localTime} ({@code isMaster} before 4.4.2), never cached. */
  public java.time.Instant serverTime() {
    Document hello = hello(client.getDatabase("admin"));
    if (hello.get("localTime") instanceof java.util.Date localTime) {
      return localTime.toInstant();
    }
    throw new RedlockNonTransientException(
        name,
        "the server's "
            + (useIsMaster ? "isMaster" : "hello")
            + " answer has no localTime date (it has "
            + hello.keySet()
            + "); is this a MongoDB-compatible server?",
        null);
  }

  private Document hello(MongoDatabase admin) {
    if (!useIsMaster) {
      try {
        return admin.runCommand(new Document("hello", 1), ReadPreference.primary());
      } catch (MongoCommandException e) {
        if (e.getErrorCode() != COMMAND_NOT_FOUND) {
          throw e;
        }
        useIsMaster = true; // before MongoDB 4.4.2 and 5.0, and the stand-in
      }
    }
    return admin.runCommand(new Document("isMaster", 1), ReadPreference.primary());
  }

  /** {@code serverStatus} without its bulkiest sections, or null if the user may not run it. */
  private static Document serverStatus(MongoDatabase admin) {
    Document command = new Document("serverStatus", 1);
    for (String section :
        List.of("metrics", "locks", "wiredTiger", "tcmalloc", "opLatencies", "repl", "network")) {
      command.append(section, 0);
    }
    try {
      return admin.runCommand(command, ReadPreference.primary());
    } catch (MongoCommandException e) {
      if (e.getErrorCode() == UNAUTHORIZED) {
        return null;
      }
      throw e;
    }
  }

  private static String version(MongoDatabase admin) {
    try {
      return admin.runCommand(new Document("buildInfo", 1)).getString("version");
    } catch (MongoCommandException e) {
      return null;
    }
  }

  private static Boolean majorityJournalDefault(MongoDatabase admin) {
    try {
      Document config =
          admin
              .runCommand(new Document("replSetGetConfig", 1), ReadPreference.primary())
              .get("config", Document.class);
      Object value = config == null ? null : config.get("writeConcernMajorityJournalDefault");
      return value == null ? Boolean.TRUE : (Boolean) value; // absent means the default, true
    } catch (MongoCommandException e) {
      if (e.getErrorCode() == UNAUTHORIZED) {
        return null;
      }
      throw e;
    }
  }

  private record Marker(String id, long ageMs) {}

  /**
   * Reads the lock-data marker, creating it if missing and replacing it if the server restarted
   * since it was made (its uptime is shorter than the marker's age).
   */
  private Marker marker(long serverUptimeMs) {
    for (int attempt = 0; attempt < MARKER_ATTEMPTS; attempt++) {
      Document found =
          locks
              .aggregate(
                  List.of(
                      new Document("$match", new Document("_id", MARKER_ID)),
                      new Document(
                          "$project",
                          new Document(MARKER_UUID, 1)
                              .append(
                                  "age",
                                  new Document(
                                      "$subtract", List.of("$$NOW", "$" + MARKER_SINCE))))))
              .first();
      if (found == null) {
        try {
          // Racing creators: one inserts, the others collide on _id and read that one.
          locks.updateOne(
              and(eq("_id", MARKER_ID), exists(MARKER_SINCE, false)),
              Updates.combine(
                  Updates.set(MARKER_UUID, UUID.randomUUID().toString()),
                  Updates.currentDate(MARKER_SINCE)),
              new UpdateOptions().upsert(true));
        } catch (RuntimeException e) {
          if (!MongoErrors.isDuplicateKey(e)) {
            throw e;
          }
        }
        continue;
      }
      String id = String.valueOf(found.get(MARKER_UUID));
      long age = found.get("age") instanceof Number n ? n.longValue() : Long.MAX_VALUE;
      if (age <= serverUptimeMs + RESTART_SLACK_MS) {
        return new Marker(id, Math.max(0, age));
      }
      // Made before the server's current process started: it restarted and kept its data.
      locks.updateOne(
          and(eq("_id", MARKER_ID), eq(MARKER_UUID, id)),
          Updates.combine(
              Updates.set(MARKER_UUID, UUID.randomUUID().toString()),
              Updates.currentDate(MARKER_SINCE)));
    }
    throw new RedlockNonTransientException(
        name,
        "status: the lock-data marker in "
            + locks.getNamespace().getFullName()
            + " keeps changing or vanishing under this node (is something deleting documents"
            + " there?)",
        null);
  }

  /**
   * The servers the driver would write to now (primary, standalone or mongos), with the process id
   * its monitor last saw: a change means a failover or a restart.
   */
  private String writableServers() {
    List<String> out = new ArrayList<>();
    for (ServerDescription s : client.getClusterDescription().getServerDescriptions()) {
      if (s.isOk()
          && (s.isPrimary()
              || s.getType() == ServerType.STANDALONE
              || s.getType() == ServerType.SHARD_ROUTER)) {
        out.add(
            s.getAddress()
                + (s.getTopologyVersion() == null
                    ? ""
                    : "@" + s.getTopologyVersion().getProcessId().toHexString()));
      }
    }
    out.sort(null);
    return String.join(",", out);
  }

  private static void put(Map<String, String> details, String key, Object value) {
    if (value != null) {
      details.put(key, String.valueOf(value));
    }
  }
}
