package io.redlock.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import io.redlock.spi.LockNode;
import io.redlock.tck.KeyInspector;
import io.redlock.tck.LockNodeCompatibilityKit;
import io.redlock.testservers.FreePorts;
import io.redlock.testservers.MongoServer;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.bson.Document;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The compatibility kit on the MongoDB backend, run twice by the same class: against the
 * wire-compatible stand-in (always, over TCP through the real driver) and against a real MongoDB
 * whenever one is available ({@value MongoServer#ENVIRONMENT}, or Testcontainers with Docker);
 * without one the second run is skipped with the reason. Each run prints which server it used.
 *
 * <p>What the stand-in cannot show: it has no replication, so {@code w: majority} and {@code j:
 * true} are accepted without meaning anything there; it never runs TTL indexes (the backend does
 * not rely on them); and its {@code $$NOW} and {@code $currentDate} read the clock of this JVM, so
 * "the server's clock" is the client's clock in the stand-in run. For R13 it reports no {@code
 * topologyVersion.processId} and no storage engine, so the node uses its lock-data marker for the
 * incarnation and reports not durable; the real-MongoDB run covers the process-id path. The restart
 * rules (R12.11, R13.3) run on the stand-in only: a real server cannot be crashed from here.
 */
@ParameterizedClass(name = "on {0}")
@EnumSource(MongoLockNodeCompatibilityTest.Target.class)
class MongoLockNodeCompatibilityTest extends LockNodeCompatibilityKit {

  /** Which server a run uses. */
  enum Target {
    STAND_IN("the mongo-java-server stand-in"),
    REAL("a real MongoDB");

    private final String label;

    Target(String label) {
      this.label = label;
    }

    @Override
    public String toString() {
      return label;
    }
  }

  private static final String DATABASE = "redlock_tck";
  private static final String SECRET = "tck-s3cret";
  private static final Map<Target, Started> SERVERS = new EnumMap<>(Target.class);

  private record Started(MongoServer server, MongoClient inspectorClient) {}

  @Parameter Target target;

  @BeforeParameterizedClassInvocation
  static void startServer(Target target) {
    MongoServer server;
    if (target == Target.STAND_IN) {
      server = MongoServer.startStandIn();
    } else {
      Optional<MongoServer> real = MongoServer.startReal();
      if (real.isEmpty()) {
        System.out.println("MongoDB TCK on a real MongoDB: SKIPPED, " + reason());
      }
      Assumptions.assumeTrue(real.isPresent(), MongoLockNodeCompatibilityTest::reason);
      server = real.get();
    }
    System.out.println("MongoDB TCK on " + target + ": " + server.description());
    SERVERS.put(target, new Started(server, MongoClients.create(server.connectionString())));
  }

  private static String reason() {
    return "the TCK ran on the stand-in only: " + MongoServer.realServerUnavailableReason();
  }

  @AfterParameterizedClassInvocation
  static void stopServer(Target target) {
    Started started = SERVERS.remove(target);
    if (started != null) {
      started.inspectorClient().close();
      started.server().close();
    }
  }

  private Started started() {
    return SERVERS.get(target);
  }

  @Override
  protected LockNode createNode() {
    return MongoLockNode.builder()
        .uri(started().server().connectionString())
        .database(DATABASE)
        .build();
  }

  /** Reads the document with the server's own clock: {@code at + ttlMs - $$NOW}. */
  @Override
  protected Optional<KeyInspector> keyInspector() {
    MongoCollection<Document> locks =
        started()
            .inspectorClient()
            .getDatabase(DATABASE)
            .getCollection(MongoLockNode.DEFAULT_COLLECTION);
    return Optional.of(
        key -> {
          Document remaining =
              new Document(
                  "$subtract",
                  List.of(
                      new Document(
                          "$add", List.of("$" + LockDocuments.AT, "$" + LockDocuments.TTL_MS)),
                      "$$NOW"));
          Document doc =
              locks
                  .aggregate(
                      List.of(
                          new Document("$match", new Document("_id", key)),
                          new Document(
                              "$project",
                              new Document(LockDocuments.TOKEN, 1).append("remaining", remaining))))
                  .first();
          if (doc == null) {
            return Optional.empty();
          }
          long millis = ((Number) doc.get("remaining")).longValue();
          return millis <= 0
              ? Optional.empty()
              : Optional.of(
                  new KeyInspector.KeyState(
                      doc.getString(LockDocuments.TOKEN), Duration.ofMillis(millis)));
        });
  }

  /** A closed loopback port, with the real server's credentials if it has any. */
  @Override
  protected Optional<LockNode> createUnreachableNode() {
    return Optional.of(
        MongoLockNode.fromUri(
            "mongodb://tck:"
                + configuredSecret().orElseThrow()
                + "@127.0.0.1:"
                + FreePorts.find()
                + "/?serverSelectionTimeoutMS=1000&connectTimeoutMS=1000"));
  }

  @Override
  protected Optional<String> configuredSecret() {
    char[] password = new ConnectionString(started().server().connectionString()).getPassword();
    return Optional.of(password == null ? SECRET : new String(password));
  }

  /**
   * Crashes and restarts the stand-in (in this JVM: it comes back empty on the same port, as a
   * server without persistence would). A real MongoDB from the environment or a container cannot be
   * crashed from here, so R12.11 and R13.3 are skipped on it.
   */
  @Override
  protected boolean restartStore() {
    MongoServer server = started().server();
    if (server.source() != MongoServer.Source.STAND_IN) {
      return false;
    }
    server.stop();
    server.restart();
    return true;
  }

  @Override
  protected Duration failureBound() {
    return Duration.ofSeconds(5); // serverSelectionTimeoutMS=1000 above, plus scheduling slack
  }
}
