package io.redlock.mongo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.mongodb.ConnectionString;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.testservers.MongoServer;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What only a real MongoDB can show, run whenever one is available ({@value
 * MongoServer#ENVIRONMENT}, or Testcontainers with Docker) and skipped with the reason otherwise:
 * the server's clock writes {@code at}, the default write concern {@code {w: majority, j: true}} is
 * accepted by a real server, the TTL index is a real TTL index, and a wrong password is refused.
 */
@Timeout(120)
@DisplayName("MongoLockNode on a real MongoDB")
class MongoRealServerTest {
  private static final Duration AWAIT = Duration.ofSeconds(10);
  private static final String DATABASE = "redlock_real_test";

  private static MongoServer server;
  private static MongoClient raw;

  @BeforeAll
  static void start() {
    Optional<MongoServer> real = MongoServer.startReal();
    if (real.isEmpty()) {
      System.out.println(
          "MongoRealServerTest: SKIPPED, " + MongoServer.realServerUnavailableReason());
    }
    Assumptions.assumeTrue(real.isPresent(), MongoServer::realServerUnavailableReason);
    server = real.get();
    System.out.println("MongoRealServerTest on " + server.description());
    raw = MongoClients.create(server.connectionString());
  }

  @AfterAll
  static void stop() {
    if (raw != null) {
      raw.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private MongoLockNode node(String extra) {
    String uri = server.connectionString();
    String sep = uri.contains("?") ? "&" : (uri.matches("mongodb(\\+srv)?://[^/]*") ? "/?" : "?");
    return MongoLockNode.fromUri(uri + sep + "redlock.database=" + DATABASE + extra);
  }

  @Test
  @DisplayName("'at' is the server's time, and the default write concern is accepted")
  void serverTimeAndWriteConcern() {
    String key = "real:" + UUID.randomUUID();
    try (MongoLockNode node = node("")) {
      assertThat(node.tryAcquire(key, "t", Duration.ofSeconds(5)).await(AWAIT).acquired()).isTrue();
    }
    Document doc =
        raw.getDatabase(DATABASE)
            .getCollection(MongoLockNode.DEFAULT_COLLECTION)
            .aggregate(
                List.of(
                    new Document("$match", new Document("_id", key)),
                    new Document("$addFields", new Document("now", "$$NOW"))))
            .first();
    assertThat(doc).isNotNull();
    long skew = doc.getDate("now").getTime() - doc.getDate("at").getTime();
    assertThat(skew).as("server now minus at, ms").isBetween(0L, 5_000L);
    assertThat(doc.get(LockDocuments.TTL_MS)).isEqualTo(5000L);
  }

  @Test
  @DisplayName("gcAfter creates a real TTL index on 'at'")
  void ttlIndex() throws InterruptedException {
    try (MongoLockNode node = node("&redlock.collection=gc_locks&redlock.gcAfter=2h")) {
      node.tryAcquire("real:" + UUID.randomUUID(), "t", Duration.ofMinutes(1)).await(AWAIT);
      MongoCollection<Document> locks = raw.getDatabase(DATABASE).getCollection("gc_locks");
      Document index = null;
      for (int i = 0; i < 100 && index == null; i++) {
        for (Document d : locks.listIndexes()) {
          if (LockDocuments.GC_INDEX.equals(d.getString("name"))) {
            index = d;
          }
        }
        if (index == null) {
          Thread.sleep(50);
        }
      }
      assertThat(index).isNotNull();
      assertThat(((Number) index.get("expireAfterSeconds")).longValue()).isEqualTo(7200);
    }
  }

  @Test
  @DisplayName("a wrong password is a non-transient authentication failure without the password")
  void wrongPassword() {
    ConnectionString cs = new ConnectionString(server.connectionString());
    Assumptions.assumeTrue(
        cs.getUsername() != null,
        "the real MongoDB in " + MongoServer.ENVIRONMENT + " has no credentials to get wrong");
    String wrong =
        server
            .connectionString()
            .replaceFirst("://([^:/@]+):[^@]*@", "://$1:Wr0ng-" + UUID.randomUUID() + "@");
    try (MongoLockNode node = MongoLockNode.fromUri(wrong)) {
      RedlockException failure =
          catchThrowableOfType(
              RedlockException.class, () -> node.release("real:k", "t").await(AWAIT));
      assertThat(failure).isInstanceOf(RedlockNonTransientException.class);
      assertThat(failure.getMessage()).contains("authentication failed").doesNotContain("Wr0ng-");
    }
  }
}
