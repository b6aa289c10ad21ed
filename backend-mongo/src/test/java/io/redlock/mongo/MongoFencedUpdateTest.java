package io.redlock.mongo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.UpdateOptions;
import com.mongodb.client.model.Updates;
import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.StaleFencingTokenException;
import io.redlock.testservers.MongoServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link MongoFencedUpdate} through the real driver, on the stand-in and on a real MongoDB when one
 * is available; leases come from a fenced Redlock over three stand-in servers as lock nodes.
 */
@ParameterizedClass(name = "on {0}")
@EnumSource(MongoTarget.class)
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("MongoFencedUpdate")
class MongoFencedUpdateTest {
  private static final Duration LONG_TTL = Duration.ofSeconds(30);
  private static final String DATABASE = "redlock_fenced_update_test";
  private static final MongoFencedUpdate FENCED = MongoFencedUpdate.create();

  private static final List<MongoServer> lockServers = new ArrayList<>();
  private static Redlock redlock;
  private static MongoServer server;
  private static MongoClient client;

  @Parameter MongoTarget target;

  private MongoCollection<Document> invoices;

  @BeforeAll
  static void startLockNodes() {
    for (int i = 0; i < 3; i++) {
      lockServers.add(MongoServer.startStandIn());
    }
    redlock =
        Redlock.builder()
            .nodes(
                lockServers.stream()
                    .map(
                        s ->
                            MongoLockNode.builder()
                                .uri(s.connectionString())
                                .database("redlock_locks")
                                .build())
                    .toList())
            .fencing(true)
            // generous for a busy 2-core machine; the default (TTL/50) is for production networks
            .nodeTimeout(Duration.ofMillis(300))
            .retry(5, Duration.ofMillis(10), Duration.ofMillis(50))
            .build();
    redlock.tryAcquire("warm-up", LONG_TTL).orElseThrow().close();
  }

  @AfterAll
  static void stopLockNodes() {
    if (redlock != null) {
      redlock.close();
      redlock = null;
    }
    lockServers.forEach(MongoServer::close);
    lockServers.clear();
  }

  @BeforeParameterizedClassInvocation
  static void start(MongoTarget target) {
    server = target.start("MongoFencedUpdateTest");
    client = MongoClients.create(server.connectionString());
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    if (client != null) {
      client.close();
      client = null;
    }
    if (server != null) {
      server.close();
      server = null;
    }
  }

  @BeforeEach
  void collection() {
    invoices = client.getDatabase(DATABASE).getCollection("invoices_" + UUID.randomUUID());
  }

  private static Bson id(Object id) {
    return Filters.eq("_id", id);
  }

  private Document doc(Object id) {
    return invoices.find(id(id)).first();
  }

  private static Bson pay(int amount, String status) {
    return Updates.combine(Updates.set("amount", amount), Updates.set("status", status));
  }

  @Test
  @DisplayName(
      "a holder that paused past its validity is refused after a newer holder wrote, and the"
          + " newer values stay")
  void pausedHolderIsRefused() throws InterruptedException {
    invoices.insertOne(new Document("_id", 1).append("amount", 0));
    String resource = "invoice-" + UUID.randomUUID();
    Lease a = redlock.tryAcquire(resource, Duration.ofMillis(300)).orElseThrow();
    long tokenA = a.fencingToken();
    Thread.sleep(700); // A "pauses" (GC, swap, a slow call) until its lease has run out
    assertThat(a.isValid()).as("A after its pause").isFalse();

    long tokenB;
    try (Lease b = redlock.tryAcquire(resource, LONG_TTL).orElseThrow()) {
      tokenB = b.fencingToken();
      assertThat(tokenB).as("B's token").isGreaterThan(tokenA);
      assertThat(FENCED.updateOne(invoices, id(1), pay(200, "by B"), tokenB)).isTrue();

      // A wakes up and writes what it computed before its pause
      assertThatThrownBy(() -> FENCED.updateOne(invoices, id(1), pay(100, "by A"), tokenA))
          .isInstanceOfSatisfying(
              StaleFencingTokenException.class,
              e -> {
                assertThat(e.resource())
                    .isEqualTo(invoices.getNamespace().getFullName() + " {\"_id\": 1}");
                assertThat(e.token()).isEqualTo(tokenA);
                assertThat(e.highestAccepted()).isEqualTo(tokenB);
              })
          .hasMessageContaining("is stale");
    }
    Document stored = doc(1);
    assertThat(stored.getInteger("amount")).isEqualTo(200);
    assertThat(stored.getString("status")).isEqualTo("by B");
    assertThat(stored.getLong("fence")).isEqualTo(tokenB);
    a.close(); // releases nothing: A's documents expired
  }

  @Test
  @DisplayName("the first write on a document without a fence is accepted and stores the token")
  void firstWriteOnFreshDocument() {
    invoices.insertOne(new Document("_id", "fresh").append("amount", 0));
    assertThat(FENCED.updateOne(invoices, id("fresh"), pay(10, "paid"), 5)).isTrue();
    Document stored = doc("fresh");
    assertThat(stored.get("fence")).as("a 64-bit integer").isEqualTo(5L);
    assertThat(stored.getInteger("amount")).isEqualTo(10);
  }

  @Test
  @DisplayName("one lease may write many times: an equal token is accepted again")
  void equalTokenAcceptedTwice() {
    invoices.insertOne(new Document("_id", 2));
    try (Lease lease = redlock.tryAcquire("eq-" + UUID.randomUUID(), LONG_TTL).orElseThrow()) {
      long token = lease.fencingToken();
      assertThat(FENCED.updateOne(invoices, id(2), pay(1, "first"), token)).isTrue();
      assertThat(FENCED.updateOne(invoices, id(2), pay(2, "second"), token)).isTrue();
      assertThat(FENCED.updateOne(invoices, id(2), pay(2, "second"), token))
          .as("the very same values again")
          .isTrue();
      assertThat(doc(2).getString("status")).isEqualTo("second");
      assertThat(doc(2).getLong("fence")).isEqualTo(token);
    }
  }

  @Test
  @DisplayName("a missing document is reported as false, not as stale, and nothing is inserted")
  void missingDocument() {
    invoices.insertOne(new Document("_id", 4));
    assertThat(FENCED.updateOne(invoices, id(4), pay(40, "ten"), 10)).isTrue();
    assertThat(FENCED.updateOne(invoices, id(404), pay(1, "nowhere"), 10)).isFalse();
    assertThat(FENCED.updateOne(invoices, id(404), pay(1, "nowhere"), 1)).isFalse();
    assertThatThrownBy(() -> FENCED.updateOne(invoices, id(4), pay(1, "stale"), 9))
        .isInstanceOf(StaleFencingTokenException.class);
    assertThat(doc(404)).isNull();
    assertThat(invoices.countDocuments()).isEqualTo(1);
  }

  @Test
  @DisplayName("with upsert, a missing document is created, and a stale token is still refused")
  void upsert() {
    UpdateOptions upsert = new UpdateOptions().upsert(true);
    assertThat(FENCED.updateOne(invoices, id(5), pay(50, "created"), 20, upsert)).isTrue();
    assertThat(doc(5).getLong("fence")).isEqualTo(20L);
    assertThat(FENCED.updateOne(invoices, id(5), pay(51, "again"), 20, upsert)).isTrue();
    assertThatThrownBy(() -> FENCED.updateOne(invoices, id(5), pay(1, "stale"), 19, upsert))
        .isInstanceOfSatisfying(
            StaleFencingTokenException.class, e -> assertThat(e.highestAccepted()).isEqualTo(20));
    assertThat(doc(5).getString("status")).isEqualTo("again");
    assertThat(invoices.countDocuments()).isEqualTo(1);
  }

  @Test
  @DisplayName("a null fence counts as none, and a custom fence field works the same way")
  void nullFenceAndCustomField() {
    invoices.insertOne(new Document("_id", 6).append("fence", null));
    assertThat(FENCED.updateOne(invoices, id(6), pay(6, "six"), 3)).isTrue();
    assertThat(doc(6).getLong("fence")).isEqualTo(3L);

    MongoFencedUpdate custom = MongoFencedUpdate.create("writeFence");
    invoices.insertOne(new Document("_id", 7));
    assertThat(custom.updateOne(invoices, id(7), pay(7, "seven"), 8)).isTrue();
    assertThatThrownBy(() -> custom.updateOne(invoices, id(7), pay(0, "stale"), 7))
        .isInstanceOf(StaleFencingTokenException.class);
    assertThat(doc(7).getLong("writeFence")).isEqualTo(8L);
    assertThat(doc(7).containsKey("fence")).isFalse();
  }

  @Test
  @DisplayName("filter and update compose with other calls, e.g. findOneAndUpdate")
  void filterAndUpdateCompose() {
    invoices.insertOne(new Document("_id", 8).append("fence", 30L));
    assertThat(
            invoices.findOneAndUpdate(
                FENCED.filter(id(8), 29), FENCED.update(Updates.set("status", "stale"), 29)))
        .as("stale: nothing matched")
        .isNull();
    assertThat(
            invoices.findOneAndUpdate(
                FENCED.filter(id(8), 31), FENCED.update(Updates.set("status", "new"), 31)))
        .isNotNull();
    assertThat(doc(8).getString("status")).isEqualTo("new");
    assertThat(doc(8).getLong("fence")).isEqualTo(31L);
  }

  @Test
  @DisplayName("racing writers with interleaved tokens: the highest token's values are what stays")
  void racingWritersEndWithHighestToken() throws Exception {
    invoices.insertOne(new Document("_id", 9));
    int writers = 4;
    int tokens = 120;
    List<Long> all = new ArrayList<>(LongStream.rangeClosed(1, tokens).boxed().toList());
    Collections.shuffle(all, new Random(13));
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    CountDownLatch start = new CountDownLatch(1);
    try {
      List<Future<Integer>> results = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        int offset = w; // writer w takes every writers-th token of the shuffled list
        List<Long> share =
            IntStream.range(0, tokens)
                .filter(i -> i % writers == offset)
                .mapToObj(all::get)
                .toList();
        results.add(
            pool.submit(
                () -> {
                  start.await();
                  int accepted = 0;
                  for (long t : share) {
                    try {
                      if (FENCED.updateOne(invoices, id(9), pay((int) t, "token " + t), t)) {
                        accepted++;
                      }
                    } catch (StaleFencingTokenException expected) {
                      // a higher token was written first
                    }
                  }
                  return accepted;
                }));
      }
      start.countDown();
      int accepted = 0;
      for (Future<Integer> f : results) {
        accepted += f.get(90, TimeUnit.SECONDS);
      }
      assertThat(accepted).as("accepted writes").isBetween(1, tokens);
    } finally {
      pool.shutdownNow();
    }
    Document stored = doc(9);
    assertThat(stored.getString("status")).isEqualTo("token " + tokens);
    assertThat(stored.getInteger("amount")).isEqualTo(tokens);
    assertThat(stored.getLong("fence")).isEqualTo((long) tokens);
  }

  @Test
  @DisplayName("a fence field that holds something else than a number is reported")
  void foreignFenceValue() {
    invoices.insertOne(new Document("_id", 10).append("fence", "high"));
    assertThatThrownBy(() -> FENCED.updateOne(invoices, id(10), pay(1, "x"), 1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("holds a STRING, not a number");
  }

  @Test
  @DisplayName("bad arguments are refused with a message that says what is wrong")
  void badArguments() {
    for (String bad : new String[] {null, "", "$fence", "a.b"}) {
      assertThatThrownBy(() -> MongoFencedUpdate.create(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid fence field");
    }
    assertThatThrownBy(() -> FENCED.filter(id(1), 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("a fencing token is positive, got 0");
    assertThatThrownBy(() -> FENCED.filter(null, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idFilter must not be null");
    assertThatThrownBy(() -> FENCED.update(new Document("amount", 5), 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("update operators such as $set")
        .hasMessageContaining("'amount'");
    assertThatThrownBy(() -> FENCED.update(Updates.inc("fence", 1), 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must not write the fence field 'fence' (found in $inc)");
    assertThatThrownBy(() -> FENCED.update(Updates.unset("fence.sub"), 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> FENCED.update(null, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("update must not be null");
    invoices.insertOne(new Document("_id", 11));
    assertThatThrownBy(() -> FENCED.updateOne(invoices, id(11), pay(1, "x"), -1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(doc(11).containsKey("fence")).as("nothing was written").isFalse();
  }
}
