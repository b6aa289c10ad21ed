package io.redlock.mongo;

import static org.assertj.core.api.Assertions.assertThat;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.event.CommandListener;
import com.mongodb.event.CommandStartedEvent;
import io.redlock.RedlockTransientException;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeStatus;
import io.redlock.testservers.MongoServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.bson.Document;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Status reports of the MongoDB backend (incarnation, uptime, durability), on the stand-in and on a
 * real MongoDB when one is available. The stand-in has no {@code topologyVersion.processId} and no
 * storage engine, so it exercises the lock-data marker and reports not durable; the process-id path
 * and the durable answer need a real server. Restarts are shown on stand-ins started by the tests
 * themselves (in this JVM, and in a JVM of their own killed with {@code SIGKILL}).
 */
@ParameterizedClass(name = "on {0}")
@EnumSource(MongoTarget.class)
@Timeout(180)
@DisplayName("MongoLockNode status")
class MongoNodeStatusTest {
  private static final Duration AWAIT = Duration.ofSeconds(10);
  private static final Duration LONG_TTL = Duration.ofSeconds(30);
  private static final String DATABASE = "redlock_status_test";

  private static MongoServer server;
  private static MongoClient raw;

  @Parameter MongoTarget target;

  @BeforeParameterizedClassInvocation
  static void start(MongoTarget target) {
    server = target.start("MongoNodeStatusTest");
    raw = MongoClients.create(server.connectionString());
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    if (raw != null) {
      raw.close();
      raw = null;
    }
    if (server != null) {
      server.close();
      server = null;
    }
  }

  private static MongoLockNode node(MongoServer on) {
    return MongoLockNode.builder().uri(on.connectionString()).database(DATABASE).build();
  }

  private static NodeStatus status(LockNode node) {
    return node.status().await(AWAIT);
  }

  /** Makes calls until one is answered: the first after a restart may fail on a dead connection. */
  private static void answerOnce(LockNode node) {
    RedlockTransientException last = null;
    for (int i = 0; i < 100; i++) {
      try {
        node.tryAcquire("probe:" + UUID.randomUUID(), "t", LONG_TTL).await(AWAIT);
        return;
      } catch (RedlockTransientException e) {
        last = e;
        sleep(100);
      }
    }
    throw new AssertionError("no answer after the restart", last);
  }

  @Test
  @DisplayName("declares fencing and status, and reports an incarnation, an uptime and details")
  void reportsStatus() {
    try (MongoLockNode node = node(server)) {
      assertThat(node.capabilities().fencing()).isTrue();
      assertThat(node.capabilities().status()).isTrue();
      NodeStatus s = status(node);
      Document serverStatus = raw.getDatabase("admin").runCommand(new Document("serverStatus", 1));
      assertThat(s.incarnation()).isNotBlank();
      assertThat(s.uptime())
          .as("uptime, never more than the server's own")
          .isLessThanOrEqualTo(
              Duration.ofMillis(((Number) serverStatus.get("uptimeMillis")).longValue()));
      assertThat(s.details())
          .containsKeys(
              "topology", "version", "writeConcern", "durability", "incarnationFrom", "statusCache")
          .containsEntry("version", serverStatus.getString("version"))
          .containsEntry("writeConcern", "{w: majority, journal: true}");
      if (target == MongoTarget.STAND_IN) {
        assertThat(s.durable()).as("the in-memory stand-in").isFalse();
        assertThat(s.details().get("durability")).contains("no storage engine");
        assertThat(s.details().get("incarnationFrom")).startsWith("lock-data marker");
        assertThat(s.incarnation()).contains("pid " + serverStatus.get("pid"));
      } else {
        assertThat(s.details().get("incarnationFrom")).isEqualTo("hello.topologyVersion.processId");
        if (s.details().get("serverStatus") == null
            && Boolean.TRUE.equals(
                serverStatus.get("storageEngine", new Document()).get("persistent"))) {
          assertThat(s.durable())
              .as("default write concern on a persistent engine: %s", s.details())
              .isTrue();
        }
      }
    }
  }

  @Test
  @DisplayName("a node with journal=false reports not durable, and says why")
  void journalFalseIsNotDurable() {
    try (MongoLockNode node =
        MongoLockNode.builder()
            .uri(server.connectionString())
            .database(DATABASE)
            .writeConcern(com.mongodb.WriteConcern.MAJORITY.withJournal(false))
            .build()) {
      NodeStatus s = status(node);
      assertThat(s.durable()).isFalse();
      assertThat(s.details().get("durability")).contains("journal");
    }
  }

  @Test
  @DisplayName("the status is cached until the client opens a new connection")
  void cachedUntilNewConnection() {
    AtomicInteger asked = new AtomicInteger();
    CommandListener counter =
        new CommandListener() {
          @Override
          public void commandStarted(CommandStartedEvent event) {
            if (event.getCommandName().equals("serverStatus")) {
              asked.incrementAndGet();
            }
          }
        };
    try (MongoLockNode node =
        MongoLockNode.builder()
            .uri(server.connectionString())
            .database(DATABASE)
            .clientSettings(s -> s.addCommandListener(counter))
            .build()) {
      NodeStatus first = status(node);
      status(node); // may ask again if the first call opened the connection it used
      int after = asked.get();
      assertThat(after).isPositive();
      NodeStatus cached = status(node);
      assertThat(asked.get()).as("serverStatus commands after a cached status").isEqualTo(after);
      assertThat(cached.incarnation()).isEqualTo(first.incarnation());
      assertThat(cached.uptime()).isGreaterThanOrEqualTo(first.uptime());
    }
  }

  @Test
  @DisplayName("a node over a client passed in asks the server every time")
  void ownClientAsksEveryTime() {
    AtomicInteger asked = new AtomicInteger();
    CommandListener counter =
        new CommandListener() {
          @Override
          public void commandStarted(CommandStartedEvent event) {
            if (event.getCommandName().equals("serverStatus")) {
              asked.incrementAndGet();
            }
          }
        };
    try (MongoClient mine =
            MongoClients.create(
                com.mongodb.MongoClientSettings.builder()
                    .applyConnectionString(
                        new com.mongodb.ConnectionString(server.connectionString()))
                    .addCommandListener(counter)
                    .build());
        MongoLockNode node = MongoLockNode.builder().client(mine).database(DATABASE).build()) {
      NodeStatus a = status(node);
      NodeStatus b = status(node);
      assertThat(asked.get()).isEqualTo(2);
      assertThat(b.incarnation()).isEqualTo(a.incarnation());
      assertThat(a.details().get("statusCache")).contains("every status asks the server");
    }
  }

  @Test
  @DisplayName("a restart of the stand-in in this JVM gives a new incarnation and a fresh uptime")
  void inProcessRestartChangesIncarnation() {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        target == MongoTarget.STAND_IN, "restarts are shown on stand-ins the test starts");
    try (MongoServer own = MongoServer.startStandIn();
        MongoLockNode node = node(own)) {
      NodeStatus before = status(node);
      sleep(1200); // let the uptime grow so that a fresh one is visible
      own.stop();
      long restartedAt = System.nanoTime();
      own.restart();
      answerOnce(node);
      NodeStatus after = status(node);
      assertThat(after.incarnation()).isNotEqualTo(before.incarnation());
      assertThat(after.uptime())
          .isLessThanOrEqualTo(Duration.ofNanos(System.nanoTime() - restartedAt).plusMillis(200));
      try (MongoLockNode fresh = node(own)) {
        assertThat(status(fresh).incarnation()).isEqualTo(after.incarnation());
      }
    }
  }

  @Test
  @DisplayName("kill -9 and restart of a stand-in in its own JVM gives a new incarnation")
  void processRestartChangesIncarnation() {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        target == MongoTarget.STAND_IN, "restarts are shown on stand-ins the test starts");
    try (MongoServer own = MongoServer.builder().start();
        MongoLockNode node = node(own)) {
      System.out.println("MongoNodeStatusTest restart on " + own.description());
      NodeStatus before = status(node);
      own.stop(); // SIGKILL
      own.restart();
      answerOnce(node);
      NodeStatus after = status(node);
      assertThat(after.incarnation()).isNotEqualTo(before.incarnation());
      assertThat(after.durable()).isFalse();
    }
  }

  @Test
  @DisplayName("a server that restarted but kept its data gets a new incarnation (marker too old)")
  void markerOlderThanServerIsReplaced() {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        target == MongoTarget.STAND_IN, "only servers without topologyVersion use the marker");
    NodeStatus before;
    try (MongoLockNode node = node(server)) {
      before = status(node);
    }
    // As if the marker had been written long before the server's current process started.
    raw.getDatabase(DATABASE)
        .getCollection(MongoLockNode.DEFAULT_COLLECTION)
        .updateOne(
            new Document("_id", new Document("redlock", "incarnation")),
            new Document("$set", new Document("since", new Date(0))));
    try (MongoLockNode node = node(server)) {
      NodeStatus after = status(node);
      assertThat(after.incarnation()).isNotEqualTo(before.incarnation());
      try (MongoLockNode again = node(server)) {
        assertThat(status(again).incarnation()).as("stable again").isEqualTo(after.incarnation());
      }
    }
  }

  @Test
  @DisplayName("the marker is no lock key, and has no 'at' for the TTL index to remove it by")
  void markerIsNotAKey() {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        target == MongoTarget.STAND_IN, "only servers without topologyVersion use the marker");
    try (MongoLockNode node = node(server)) {
      status(node);
    }
    List<Document> markers = new ArrayList<>();
    raw.getDatabase(DATABASE)
        .getCollection(MongoLockNode.DEFAULT_COLLECTION)
        .find(new Document("_id", new Document("redlock", "incarnation")))
        .into(markers);
    assertThat(markers).hasSize(1);
    assertThat(markers.get(0).keySet()).containsExactlyInAnyOrder("_id", "id", "since");
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
