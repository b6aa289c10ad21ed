package io.redlock.mongo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodes;
import io.redlock.testservers.FreePorts;
import io.redlock.testservers.MongoServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.UUID;
import org.bson.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The MongoDB backend's own behaviour, beyond the compatibility kit, on the stand-in over TCP
 * through the real driver. Rules the stand-in cannot show (authentication with real users,
 * replication and write concern, TTL-index deletion, the server's clock differing from ours) are
 * named where they come up; {@link MongoRealServerTest} checks them on a real MongoDB when one is
 * available.
 */
@Timeout(120)
@DisplayName("MongoLockNode")
class MongoLockNodeTest {
  private static final Duration AWAIT = Duration.ofSeconds(10);
  private static final Duration LONG_TTL = Duration.ofSeconds(30);

  private static MongoServer server;
  private static MongoClient raw;

  @BeforeAll
  static void start() {
    server = MongoServer.startStandIn();
    System.out.println("MongoLockNodeTest on " + server.description());
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

  private static String key() {
    return "test:" + UUID.randomUUID();
  }

  private static String token() {
    return UUID.randomUUID().toString();
  }

  private static MongoCollection<Document> rawCollection(String db, String collection) {
    return raw.getDatabase(db).getCollection(collection);
  }

  @Nested
  @DisplayName("stores one document per key")
  class Documents {

    @Test
    @DisplayName("acquire writes {_id: key, token, ttlMs (64-bit), at (server date)}")
    void documentShape() {
      String key = key();
      String token = token();
      long before = System.currentTimeMillis();
      try (MongoLockNode node = MongoLockNode.fromUri(server.connectionString())) {
        assertThat(node.tryAcquire(key, token, Duration.ofMillis(1234)).await(AWAIT).acquired())
            .isTrue();
      }
      Document doc =
          rawCollection(MongoLockNode.DEFAULT_DATABASE, MongoLockNode.DEFAULT_COLLECTION)
              .find(new Document("_id", key))
              .first();
      assertThat(doc).isNotNull();
      assertThat(doc.keySet()).containsExactlyInAnyOrder("_id", "token", "ttlMs", "at");
      assertThat(doc.get("token")).isEqualTo(token);
      assertThat(doc.get("ttlMs")).isEqualTo(1234L);
      // The stand-in runs in this JVM, so its clock is ours: only here can "at" be compared.
      assertThat(doc.get("at")).isInstanceOf(Date.class);
      assertThat(doc.getDate("at").getTime())
          .isBetween(before - 1000, System.currentTimeMillis() + 1000);
    }

    @Test
    @DisplayName("a sub-millisecond remainder of the TTL is rounded up, never down")
    void ttlRoundedUp() {
      String key = key();
      try (MongoLockNode node = MongoLockNode.fromUri(server.connectionString())) {
        node.tryAcquire(key, token(), Duration.ofNanos(1_500_000)).await(AWAIT);
      }
      Document doc =
          rawCollection(MongoLockNode.DEFAULT_DATABASE, MongoLockNode.DEFAULT_COLLECTION)
              .find(new Document("_id", key))
              .first();
      assertThat(doc.get("ttlMs")).isEqualTo(2L);
    }

    @Test
    @DisplayName(
        "a release abandoned at once still runs (it can only delete the caller's own key), and ends"
            + " exactly once with its answer")
    void abandonedReleaseStillRuns() throws InterruptedException {
      try (MongoLockNode node = MongoLockNode.fromUri(server.connectionString())) {
        java.util.List<String> keys = new java.util.ArrayList<>();
        String token = token();
        for (int i = 0; i < 50; i++) {
          String key = key();
          keys.add(key);
          assertThat(node.tryAcquire(key, token, LONG_TTL).await(AWAIT).acquired()).isTrue();
        }
        java.util.Map<String, java.util.List<Boolean>> ended =
            new java.util.concurrent.ConcurrentHashMap<>();
        for (String key : keys) {
          node.release(key, token)
              .abandon(
                  answer ->
                      ended
                          .computeIfAbsent(
                              key, k -> java.util.Collections.synchronizedList(new ArrayList<>()))
                          .add(answer));
        }
        long deadline = System.nanoTime() + AWAIT.toNanos();
        while (ended.size() < keys.size() && System.nanoTime() - deadline < 0) {
          Thread.sleep(20);
        }
        MongoCollection<Document> locks =
            rawCollection(MongoLockNode.DEFAULT_DATABASE, MongoLockNode.DEFAULT_COLLECTION);
        for (String key : keys) {
          assertThat(ended.get(key)).as("ends of %s", key).containsExactly(true);
          assertThat(locks.countDocuments(new Document("_id", key)))
              .as("documents of %s", key)
              .isZero();
        }
      }
    }

    @Test
    @DisplayName("an expired key is taken over in place: still one document, new token")
    void expiredKeyTakenOverInPlace() throws InterruptedException {
      String key = key();
      String second = token();
      try (MongoLockNode node = MongoLockNode.fromUri(server.connectionString())) {
        assertThat(node.tryAcquire(key, token(), Duration.ofMillis(100)).await(AWAIT).acquired())
            .isTrue();
        Thread.sleep(300);
        assertThat(node.tryAcquire(key, second, LONG_TTL).await(AWAIT).acquired()).isTrue();
        assertThat(node.release(key, second).await(AWAIT)).isTrue();
        assertThat(node.tryAcquire(key, second, LONG_TTL).await(AWAIT).acquired()).isTrue();
      }
      MongoCollection<Document> locks =
          rawCollection(MongoLockNode.DEFAULT_DATABASE, MongoLockNode.DEFAULT_COLLECTION);
      assertThat(locks.countDocuments(new Document("_id", key))).isEqualTo(1);
      assertThat(locks.find(new Document("_id", key)).first().get("token")).isEqualTo(second);
    }

    @Test
    @DisplayName("a foreign document without lock fields under the key counts as absent")
    void foreignDocumentIsAbsent() {
      String key = key();
      MongoCollection<Document> locks = rawCollection("redlock_foreign", "locks");
      locks.insertOne(new Document("_id", key).append("note", "left by hand"));
      try (MongoLockNode node =
          MongoLockNode.builder()
              .uri(server.connectionString())
              .database("redlock_foreign")
              .build()) {
        assertThat(node.tryAcquire(key, token(), LONG_TTL).await(AWAIT).acquired()).isTrue();
      }
    }
  }

  @Nested
  @DisplayName("options from the connection string and the builder")
  class Options {

    @Test
    @DisplayName("redlock.database and redlock.collection choose where documents go")
    void databaseAndCollectionOptions() {
      String key = key();
      String uri =
          server.connectionString() + "/?redlock.database=opt_db&redlock.collection=opt_locks";
      try (MongoLockNode node = MongoLockNode.fromUri(uri)) {
        assertThat(node.database()).isEqualTo("opt_db");
        assertThat(node.collection()).isEqualTo("opt_locks");
        assertThat(node.name()).isEqualTo(uri);
        assertThat(node.tryAcquire(key, token(), LONG_TTL).await(AWAIT).acquired()).isTrue();
      }
      assertThat(rawCollection("opt_db", "opt_locks").countDocuments(new Document("_id", key)))
          .isEqualTo(1);
    }

    @Test
    @DisplayName("the path names the database (and db.collection the collection)")
    void pathDatabase() {
      try (MongoLockNode a = MongoLockNode.fromUri(server.connectionString() + "/appdb");
          MongoLockNode b = MongoLockNode.fromUri(server.connectionString() + "/appdb.mylocks");
          MongoLockNode c = MongoLockNode.fromUri(server.connectionString())) {
        assertThat(a.database()).isEqualTo("appdb");
        assertThat(a.collection()).isEqualTo(MongoLockNode.DEFAULT_COLLECTION);
        assertThat(b.database()).isEqualTo("appdb");
        assertThat(b.collection()).isEqualTo("mylocks");
        assertThat(c.database()).isEqualTo(MongoLockNode.DEFAULT_DATABASE);
      }
    }

    @Test
    @DisplayName("builder settings win over the connection string")
    void builderWins() {
      try (MongoLockNode node =
          MongoLockNode.builder()
              .uri(server.connectionString() + "/appdb?redlock.collection=fromuri&w=1")
              .database("frombuilder")
              .collection("builderlocks")
              .writeConcern(WriteConcern.W2)
              .build()) {
        assertThat(node.database()).isEqualTo("frombuilder");
        assertThat(node.collection()).isEqualTo("builderlocks");
        assertThat(node.writeConcern()).isEqualTo(WriteConcern.W2);
      }
    }

    @Test
    @DisplayName("the write concern is majority + journaled unless the connection string sets one")
    void writeConcernDefaults() {
      try (MongoLockNode byDefault = MongoLockNode.fromUri(server.connectionString());
          MongoLockNode w1 = MongoLockNode.fromUri(server.connectionString() + "/?w=1");
          MongoLockNode wtimeout =
              MongoLockNode.fromUri(server.connectionString() + "/?w=majority&wtimeoutMS=2500")) {
        assertThat(byDefault.writeConcern()).isEqualTo(WriteConcern.MAJORITY.withJournal(true));
        assertThat(w1.writeConcern()).isEqualTo(WriteConcern.W1);
        assertThat(wtimeout.writeConcern())
            .isEqualTo(
                WriteConcern.MAJORITY.withWTimeout(
                    2500, java.util.concurrent.TimeUnit.MILLISECONDS));
        // The stand-in has no replicas: it accepts w=majority and j=true without meaning anything.
        String key = key();
        assertThat(byDefault.tryAcquire(key, token(), LONG_TTL).await(AWAIT).acquired()).isTrue();
      }
    }

    @Test
    @DisplayName("w=0 is refused: an unacknowledged write cannot tell acquired from held")
    void unacknowledgedRefused() {
      assertThatThrownBy(() -> MongoLockNode.fromUri(server.connectionString() + "/?w=0"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("w=0")
          .hasMessageContaining("w=majority");
    }

    @Test
    @DisplayName("an unknown redlock.* option is an error that lists the known ones")
    void unknownOption() {
      assertThatThrownBy(
              () ->
                  MongoLockNode.fromUri(
                      "mongodb://u:pw123@127.0.0.1:1/?redlock.colection=x&authSource=admin"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("redlock.colection")
          .hasMessageContaining("redlock.collection")
          .hasMessageContaining("redlock.gcAfter")
          .hasMessageNotContaining("pw123");
    }

    @Test
    @DisplayName("bad option values, duplicates and missing values are errors naming the option")
    void badOptionValues() {
      String base = "mongodb://127.0.0.1:1/?";
      assertThatThrownBy(() -> MongoLockNode.fromUri(base + "redlock.threads=many"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("redlock.threads");
      assertThatThrownBy(() -> MongoLockNode.fromUri(base + "redlock.threads=0"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("threads");
      assertThatThrownBy(() -> MongoLockNode.fromUri(base + "redlock.gcAfter=soon"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("redlock.gcAfter");
      assertThatThrownBy(() -> MongoLockNode.fromUri(base + "redlock.gcAfter=500ms"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("at least 1 second");
      assertThatThrownBy(
              () -> MongoLockNode.fromUri(base + "redlock.collection=a&redlock.collection=b"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("twice");
      assertThatThrownBy(() -> MongoLockNode.fromUri(base + "redlock.database="))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("no value");
      assertThatThrownBy(() -> MongoLockNode.fromUri(base + "redlock.database=a.b"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("database name");
      assertThatThrownBy(() -> MongoLockNode.fromUri(base + "redlock.collection=system.x"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("reserved");
    }

    @Test
    @DisplayName("redlock.* values are read as the SPI reads every backend's options")
    void optionValues() {
      assertThatThrownBy(() -> MongoLockNode.fromUri("mongodb://127.0.0.1:1/?redlock.gcAfter=soon"))
          .hasMessageContaining("redlock.gcAfter must be a duration");
      assertThatThrownBy(() -> MongoLockNode.fromUri("mongodb://127.0.0.1:1/?redlock.threads=0"))
          .hasMessageContaining("redlock.threads must be a whole number from 1 to 256");
    }

    @Test
    @DisplayName("not a MongoDB connection string, or a malformed one, is an error without secrets")
    void malformedUris() {
      assertThatThrownBy(() -> MongoLockNode.fromUri("redis://localhost:6379"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("mongodb://");
      assertThatThrownBy(() -> MongoLockNode.fromUri("mongodb://u:s3cr3t@"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid MongoDB connection string")
          .hasMessageNotContaining("s3cr3t");
      assertThatThrownBy(() -> MongoLockNode.fromUri(" "))
          .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("exactly one of uri and client must be given")
    void uriOrClient() {
      assertThatThrownBy(() -> MongoLockNode.builder().build())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("uri(");
      assertThatThrownBy(
              () -> MongoLockNode.builder().uri(server.connectionString()).client(raw).build())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("not both");
      assertThatThrownBy(() -> MongoLockNode.builder().client(raw).clientSettings(s -> {}).build())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("clientSettings");
    }

    @Test
    @DisplayName("clientSettings adjusts the driver settings of a node's own client")
    void clientSettingsApplied() {
      List<String> commands = new ArrayList<>();
      try (MongoLockNode node =
          MongoLockNode.builder()
              .uri(server.connectionString())
              .clientSettings(
                  s ->
                      s.addCommandListener(
                          new com.mongodb.event.CommandListener() {
                            @Override
                            public void commandStarted(
                                com.mongodb.event.CommandStartedEvent event) {
                              synchronized (commands) {
                                commands.add(event.getCommandName());
                              }
                            }
                          }))
              .build()) {
        node.tryAcquire(key(), token(), LONG_TTL).await(AWAIT);
      }
      synchronized (commands) {
        assertThat(commands).contains("update");
      }
    }

    @Test
    @DisplayName("gcAfter creates a TTL index on 'at' and rejects longer TTLs")
    void gcIndex() throws InterruptedException {
      try (MongoLockNode node =
          MongoLockNode.fromUri(
              server.connectionString() + "/?redlock.database=gc_db&redlock.gcAfter=1h")) {
        assertThatThrownBy(() -> node.tryAcquire(key(), token(), Duration.ofHours(2)))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("gcAfter");
        assertThatThrownBy(() -> node.extend(key(), token(), Duration.ofHours(2)))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("gcAfter");
        Document index = null;
        for (int i = 0; i < 100 && index == null; i++) { // created in the background
          for (Document d : rawCollection("gc_db", "locks").listIndexes()) {
            if (LockDocuments.GC_INDEX.equals(d.getString("name"))) {
              index = d;
            }
          }
          if (index == null) {
            Thread.sleep(50);
          }
        }
        assertThat(index).as("the TTL index %s", LockDocuments.GC_INDEX).isNotNull();
        assertThat(index.get("key", Document.class)).isEqualTo(new Document("at", 1));
        assertThat(((Number) index.get("expireAfterSeconds")).longValue()).isEqualTo(3600);
        // Only after the index exists: the stand-in (not real MongoDB) can fail an upsert that
        // races the creation of an index on a new collection with "Unknown error: null".
        assertThat(node.tryAcquire(key(), token(), Duration.ofHours(1)).await(AWAIT).acquired())
            .isTrue();
        // The stand-in records the index but never deletes by it: deletion is not shown here.
      }
    }
  }

  @Nested
  @DisplayName("a MongoClient passed in")
  class OwnClient {

    @Test
    @DisplayName("is used and not closed by the node")
    void notClosed() {
      try (MongoClient mine = MongoClients.create(server.connectionString())) {
        String key = key();
        MongoLockNode node = MongoLockNode.builder().client(mine).database("own_client").build();
        assertThat(node.name())
            .startsWith("mongodb://127.0.0.1:")
            .endsWith("/own_client?redlock.collection=locks");
        assertThat(node.tryAcquire(key, token(), LONG_TTL).await(AWAIT).acquired()).isTrue();
        node.close();
        node.close();
        assertThatThrownBy(() -> node.tryAcquire(key, token(), LONG_TTL))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining(node.name());
        // still usable: the node did not close it
        assertThat(
                mine.getDatabase("own_client")
                    .getCollection("locks")
                    .countDocuments(new Document("_id", key)))
            .isEqualTo(1);
      }
    }

    @Test
    @DisplayName("closed by its owner too early gives a non-transient error that says so")
    void closedByOwner() {
      MongoClient mine = MongoClients.create(server.connectionString());
      try (MongoLockNode node = MongoLockNode.builder().client(mine).build()) {
        mine.close();
        RedlockException failure =
            catchThrowableOfType(
                RedlockException.class,
                () -> node.tryAcquire(key(), token(), LONG_TTL).await(AWAIT));
        assertThat(failure)
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("do not close it");
      }
    }
  }

  @Nested
  @DisplayName("failures")
  class Failures {

    @Test
    @DisplayName("an unreachable node fails transiently in bounded time, naming it without secrets")
    void unreachable() {
      int port = FreePorts.find();
      String uri =
          "mongodb://app:pa55word@127.0.0.1:"
              + port
              + "/?serverSelectionTimeoutMS=500&tlsCertificateKeyFilePassword=keypa55"
              + "&authMechanismProperties=AWS_SESSION_TOKEN:t0ken";
      try (MongoLockNode node = MongoLockNode.fromUri(uri)) {
        assertThat(node.name())
            .contains("127.0.0.1:" + port)
            .doesNotContain("pa55word", "keypa55", "t0ken");
        long start = System.nanoTime();
        RedlockException failure =
            catchThrowableOfType(
                RedlockException.class,
                () -> node.tryAcquire(key(), token(), LONG_TTL).await(AWAIT));
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(8));
        assertThat(failure).isInstanceOf(RedlockTransientException.class);
        assertThat(failure.node()).contains(node.name());
        assertThat(failure.getMessage())
            .contains("serverSelectionTimeoutMS", "reachable")
            .doesNotContain("pa55word", "keypa55", "t0ken");
      }
    }

    @Test
    @DisplayName("a server that accepts connections but never answers fails transiently in time")
    void silentServer() throws IOException {
      try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
        List<Socket> accepted = new ArrayList<>();
        Thread acceptor =
            new Thread(
                () -> {
                  while (!silent.isClosed()) {
                    try {
                      Socket s = silent.accept(); // hold it open, never answer
                      synchronized (accepted) {
                        accepted.add(s);
                      }
                    } catch (IOException closed) {
                      return;
                    }
                  }
                },
                "silent-mongo");
        acceptor.setDaemon(true);
        acceptor.start();
        String uri =
            "mongodb://127.0.0.1:"
                + silent.getLocalPort()
                + "/?serverSelectionTimeoutMS=700&connectTimeoutMS=500&socketTimeoutMS=500";
        try (MongoLockNode node = MongoLockNode.fromUri(uri)) {
          long start = System.nanoTime();
          RedlockException failure =
              catchThrowableOfType(
                  RedlockException.class, () -> node.release(key(), token()).await(AWAIT));
          assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(8));
          assertThat(failure).isInstanceOf(RedlockTransientException.class);
        } finally {
          synchronized (accepted) {
            for (Socket s : accepted) {
              s.close();
            }
          }
        }
      }
    }

    @Test
    @DisplayName("timeoutMS in the connection string bounds each operation")
    void timeoutMsBoundsOperations() throws IOException {
      try (MongoLockNode working =
          MongoLockNode.fromUri(server.connectionString() + "/?timeoutMS=3000")) {
        assertThat(working.tryAcquire(key(), token(), LONG_TTL).await(AWAIT).acquired()).isTrue();
      }
      try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
          MongoLockNode node =
              MongoLockNode.fromUri(
                  "mongodb://127.0.0.1:" + silent.getLocalPort() + "/?timeoutMS=600")) {
        long start = System.nanoTime();
        RedlockException failure =
            catchThrowableOfType(
                RedlockException.class, () -> node.extend(key(), token(), LONG_TTL).await(AWAIT));
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(8));
        assertThat(failure).isInstanceOf(RedlockTransientException.class);
      }
    }

    @Test
    @DisplayName("authentication failure is non-transient, says what to check, hides the password")
    void authenticationFailure() {
      // The stand-in has no users: it refuses every authentication attempt (it does not know
      // saslStart), which drives the driver's authentication-failure path. A real MongoDB with a
      // wrong password is checked in MongoRealServerTest when REDLOCK_TEST_MONGO has credentials.
      String uri = server.connectionString().replace("mongodb://", "mongodb://app:Wr0ngPass@");
      try (MongoLockNode node = MongoLockNode.fromUri(uri + "/?authSource=admin")) {
        RedlockException failure =
            catchThrowableOfType(
                RedlockException.class,
                () -> node.tryAcquire(key(), token(), LONG_TTL).await(AWAIT));
        assertThat(failure).isInstanceOf(RedlockNonTransientException.class);
        assertThat(failure.getMessage())
            .contains("authentication failed", "user name, password, authSource")
            .doesNotContain("Wr0ngPass");
        assertThat(failure.node()).hasValueSatisfying(n -> assertThat(n).contains("app:***@"));
      }
    }

    @Test
    @DisplayName("a node whose server stops fails transiently, and works again once it is back")
    void serverStopsAndReturns() {
      try (MongoServer own = MongoServer.startStandIn();
          MongoLockNode node =
              MongoLockNode.fromUri(
                  own.connectionString()
                      + "/?serverSelectionTimeoutMS=1000&connectTimeoutMS=500")) {
        String key = key();
        assertThat(node.tryAcquire(key, token(), LONG_TTL).await(AWAIT).acquired()).isTrue();
        own.stop();
        RedlockException failure =
            catchThrowableOfType(
                RedlockException.class,
                () -> node.tryAcquire(key(), token(), LONG_TTL).await(AWAIT));
        assertThat(failure).isInstanceOf(RedlockTransientException.class);
        own.restart(); // comes back empty, as a restart without persistence
        AcquireResult again = null;
        for (int i = 0; i < 50 && again == null; i++) { // the driver reconnects on its own
          try {
            again = node.tryAcquire(key, token(), LONG_TTL).await(AWAIT);
          } catch (RedlockTransientException notYet) {
            sleep(100);
          }
        }
        assertThat(again).as("an answer after the restart").isNotNull();
        assertThat(again.acquired()).as("the restarted stand-in lost the key").isTrue();
      }
    }
  }

  @Nested
  @DisplayName("discovery")
  class Discovery {

    @Test
    @DisplayName("mongodb:// and mongodb+srv:// URIs open MongoLockNodes through ServiceLoader")
    void providerFound() {
      LockNodes nodes = LockNodes.discover();
      try (LockNode node = nodes.open(server.connectionString() + "/?redlock.collection=disc")) {
        assertThat(node).isInstanceOf(MongoLockNode.class);
        assertThat(((MongoLockNode) node).collection()).isEqualTo("disc");
        assertThat(node.tryAcquire(key(), token(), LONG_TTL).await(AWAIT).acquired()).isTrue();
      }
      // An SRV address is resolved by the driver in the background: opening needs no DNS.
      try (LockNode srv = nodes.open("mongodb+srv://app:pw9@cluster0.example.invalid/app")) {
        assertThat(srv).isInstanceOf(MongoLockNode.class);
        assertThat(srv.name()).isEqualTo("mongodb+srv://app:***@cluster0.example.invalid/app");
      }
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
