package io.redlock.mongo;

import static org.assertj.core.api.Assertions.assertThat;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import io.redlock.spi.AcquireResult;
import io.redlock.testservers.MongoServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.bson.Document;
import org.junit.jupiter.api.AfterEach;
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
 * Fencing counters of the MongoDB backend, read back from the documents themselves: on the stand-in
 * over TCP through the real driver, and on a real MongoDB when one is available (same tests).
 */
@ParameterizedClass(name = "on {0}")
@EnumSource(MongoTarget.class)
@Timeout(120)
@DisplayName("MongoLockNode fencing counters")
class MongoFencingTest {
  private static final Duration AWAIT = Duration.ofSeconds(10);
  private static final Duration LONG_TTL = Duration.ofSeconds(30);
  private static final String DATABASE = "redlock_fencing_test";

  private static MongoServer server;
  private static MongoClient raw;

  @Parameter MongoTarget target;

  private final List<MongoLockNode> nodes = new ArrayList<>();

  @BeforeParameterizedClassInvocation
  static void start(MongoTarget target) {
    server = target.start("MongoFencingTest");
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

  @BeforeEach
  void clean() {
    locks().deleteMany(new Document());
  }

  @AfterEach
  void closeNodes() {
    nodes.forEach(MongoLockNode::close);
  }

  private MongoLockNode node() {
    MongoLockNode node =
        MongoLockNode.builder().uri(server.connectionString()).database(DATABASE).build();
    nodes.add(node);
    return node;
  }

  private static MongoCollection<Document> locks() {
    return raw.getDatabase(DATABASE).getCollection(MongoLockNode.DEFAULT_COLLECTION);
  }

  private static Document doc(String key) {
    return locks().find(new Document("_id", key)).first();
  }

  private static String key() {
    return "fence:" + UUID.randomUUID();
  }

  private static String token() {
    return UUID.randomUUID().toString();
  }

  private static long acquireFenced(MongoLockNode node, String key, String token, Duration ttl) {
    AcquireResult result = node.tryAcquireFenced(key, token, ttl).await(AWAIT);
    assertThat(result.acquired()).as("fenced acquisition of %s", key).isTrue();
    return result.fence();
  }

  @Test
  @DisplayName("a new key's counter starts at the server's time in µs, and each acquisition adds 1")
  void startsAtServerMicrosAndCountsUp() {
    MongoLockNode node = node();
    String key = key();
    String first = token();
    long f1 = acquireFenced(node, key, first, LONG_TTL);
    Document d = doc(key);
    assertThat(d.get(LockDocuments.FENCE))
        .as("stored as a 64-bit integer")
        .isInstanceOf(Long.class);
    assertThat(d.getLong(LockDocuments.FENCE)).isEqualTo(f1);
    assertThat(f1)
        .as("floor: the acquisition's server time 'at' in µs, plus the fresh counter (1)")
        .isEqualTo(d.getDate(LockDocuments.AT).getTime() * 1000 + 1);
    assertThat(node.release(key, first).await(AWAIT)).isTrue();
    long f2 = acquireFenced(node, key, token(), LONG_TTL);
    assertThat(f2).as("the next acquisition increments by one").isEqualTo(f1 + 1);
  }

  @Test
  @DisplayName("release keeps a fenced document (no token, expired) and still deletes a plain one")
  void releaseKeepsCounterDeletesPlain() {
    MongoLockNode node = node();
    String fenced = key();
    String owner = token();
    long fence = acquireFenced(node, fenced, owner, LONG_TTL);
    assertThat(node.release(fenced, owner).await(AWAIT)).isTrue();
    assertThat(node.release(fenced, owner).await(AWAIT)).as("a second release").isFalse();
    Document kept = doc(fenced);
    assertThat(kept).as("the fenced document after release").isNotNull();
    assertThat(kept.containsKey(LockDocuments.TOKEN)).as("token removed").isFalse();
    assertThat(kept.getLong(LockDocuments.FENCE)).isEqualTo(fence);
    assertThat(kept.getLong(LockDocuments.TTL_MS)).isEqualTo(LockDocuments.RELEASED_TTL_MS);
    assertThat(node.tryAcquire(fenced, token(), LONG_TTL).await(AWAIT).acquired())
        .as("a released fenced key is free")
        .isTrue();

    String plain = key();
    String plainOwner = token();
    assertThat(node.tryAcquire(plain, plainOwner, LONG_TTL).await(AWAIT).acquired()).isTrue();
    assertThat(doc(plain).containsKey(LockDocuments.FENCE))
        .as("plain acquire adds no counter")
        .isFalse();
    assertThat(node.release(plain, plainOwner).await(AWAIT)).isTrue();
    assertThat(doc(plain)).as("the plain document after release").isNull();
  }

  @Test
  @DisplayName("a node that never used fencing releases a fenced key too (and the counter stays)")
  void otherNodeReleasesFencedKey() {
    String key = key();
    String owner = token();
    long fence = acquireFenced(node(), key, owner, LONG_TTL);
    MongoLockNode plainNode = node();
    assertThat(plainNode.release(key, "not-" + owner).await(AWAIT)).isFalse();
    assertThat(plainNode.release(key, owner).await(AWAIT)).isTrue();
    assertThat(doc(key).getLong(LockDocuments.FENCE)).isEqualTo(fence);
    assertThat(acquireFenced(plainNode, key, token(), LONG_TTL)).isEqualTo(fence + 1);
  }

  @Test
  @DisplayName("the counter survives expiry and a plain holder in between")
  void survivesExpiryAndPlainHolder() throws InterruptedException {
    MongoLockNode node = node();
    String key = key();
    long f1 = acquireFenced(node, key, token(), Duration.ofMillis(150));
    Thread.sleep(400);
    String plain = token();
    assertThat(node.tryAcquire(key, plain, Duration.ofMillis(150)).await(AWAIT).acquired())
        .as("a plain acquisition after the fenced holder expired")
        .isTrue();
    assertThat(doc(key).getLong(LockDocuments.FENCE))
        .as("plain acquire keeps the counter")
        .isEqualTo(f1);
    Thread.sleep(400);
    assertThat(acquireFenced(node, key, token(), LONG_TTL)).isEqualTo(f1 + 1);
  }

  @Test
  @DisplayName("a fenced acquisition of a key first taken without fencing starts from the floor")
  void plainKeyGetsFloor() throws InterruptedException {
    MongoLockNode node = node();
    String key = key();
    assertThat(node.tryAcquire(key, token(), Duration.ofMillis(100)).await(AWAIT).acquired())
        .isTrue();
    Thread.sleep(300);
    long fence = acquireFenced(node, key, token(), LONG_TTL);
    assertThat(fence).isEqualTo(doc(key).getDate(LockDocuments.AT).getTime() * 1000 + 1);
  }

  @Test
  @DisplayName("a lost document (as the TTL index removes it) restarts above every earlier fence")
  void lostDocumentRestartsAboveEarlierFences() throws InterruptedException {
    MongoLockNode node = node();
    String key = key();
    String owner = token();
    long before = acquireFenced(node, key, owner, LONG_TTL);
    for (int i = 0; i < 5; i++) { // a few more acquisitions count the counter up
      assertThat(node.release(key, owner).await(AWAIT)).isTrue();
      owner = token();
      before = acquireFenced(node, key, owner, LONG_TTL);
    }
    assertThat(node.release(key, owner).await(AWAIT)).isTrue();
    Thread.sleep(5); // the floor counts the server's milliseconds
    assertThat(locks().deleteOne(new Document("_id", key)).getDeletedCount()).isEqualTo(1);
    long after = acquireFenced(node, key, token(), LONG_TTL);
    assertThat(after)
        .as("first fence after the document was lost (the last one before was %d)", before)
        .isGreaterThan(before);
  }

  @Test
  @DisplayName("raiseFence works only for the live holder's token and never lowers the counter")
  void raiseFenceOnlyForLiveHolder() throws InterruptedException {
    MongoLockNode node = node();
    String key = key();
    String owner = token();
    long fence = acquireFenced(node, key, owner, LONG_TTL);
    long higher = fence + 1_000_000;
    assertThat(node.raiseFence(key, token(), higher).await(AWAIT)).as("another token").isFalse();
    assertThat(doc(key).getLong(LockDocuments.FENCE)).isEqualTo(fence);
    assertThat(node.raiseFence(key, owner, higher).await(AWAIT)).as("the holder").isTrue();
    assertThat(doc(key).getLong(LockDocuments.FENCE)).isEqualTo(higher);
    assertThat(node.raiseFence(key, owner, 7).await(AWAIT)).as("the holder, lower").isTrue();
    assertThat(doc(key).getLong(LockDocuments.FENCE)).as("never lowered").isEqualTo(higher);
    assertThat(doc(key).getString(LockDocuments.TOKEN)).as("holder unchanged").isEqualTo(owner);
    assertThat(node.release(key, owner).await(AWAIT)).isTrue();
    assertThat(node.raiseFence(key, owner, higher + 5).await(AWAIT))
        .as("the former holder after release")
        .isFalse();

    String shortLived = token();
    long next = acquireFenced(node, key, shortLived, Duration.ofMillis(100));
    assertThat(next).isEqualTo(higher + 1);
    Thread.sleep(300);
    assertThat(node.raiseFence(key, shortLived, next + 1_000_000).await(AWAIT))
        .as("a holder whose key expired")
        .isFalse();
    assertThat(doc(key).getLong(LockDocuments.FENCE)).isEqualTo(next);
  }

  @Test
  @DisplayName("racing node instances: exactly one winner per round, each fence one above the last")
  void racingNodesOneWinnerPerRound() throws Exception {
    int clients = 4;
    int rounds = 15;
    List<MongoLockNode> racers = new ArrayList<>();
    for (int i = 0; i < clients; i++) {
      racers.add(node());
    }
    String key = key();
    ExecutorService pool = Executors.newFixedThreadPool(clients);
    List<Long> fences = new ArrayList<>();
    try {
      for (int round = 0; round < rounds; round++) {
        CyclicBarrier start = new CyclicBarrier(clients);
        List<String> tokens = new ArrayList<>();
        List<Future<AcquireResult>> answers = new ArrayList<>();
        for (MongoLockNode racer : racers) {
          String t = token();
          tokens.add(t);
          answers.add(
              pool.submit(
                  () -> {
                    start.await(10, TimeUnit.SECONDS);
                    return racer.tryAcquireFenced(key, t, LONG_TTL).await(AWAIT);
                  }));
        }
        int winner = -1;
        for (int i = 0; i < clients; i++) {
          AcquireResult r = answers.get(i).get(30, TimeUnit.SECONDS);
          if (r.acquired()) {
            assertThat(winner).as("round %d: a second winner (node %d)", round, i).isEqualTo(-1);
            winner = i;
            fences.add(r.fence());
          } else {
            assertThat(r.fence()).isZero();
          }
        }
        assertThat(winner).as("round %d: a winner", round).isNotNegative();
        assertThat(racers.get(winner).release(key, tokens.get(winner)).await(AWAIT)).isTrue();
      }
    } finally {
      pool.shutdownNow();
    }
    for (int i = 1; i < fences.size(); i++) {
      assertThat(fences.get(i))
          .as("fence of round %d: losers do not count up; all: %s", i, fences)
          .isEqualTo(fences.get(i - 1) + 1);
    }
  }

  @Test
  @DisplayName("fenced keys work with gcAfter, whose TTL index does not hold up acquisition")
  void fencingWithGcAfter() {
    try (MongoLockNode node =
        MongoLockNode.builder()
            .uri(server.connectionString())
            .database(DATABASE)
            .collection("gc_fenced")
            .gcAfter(Duration.ofHours(1))
            .build()) {
      String key = key();
      String owner = token();
      long f1 = acquireFenced(node, key, owner, LONG_TTL);
      assertThat(node.release(key, owner).await(AWAIT)).isTrue();
      assertThat(acquireFenced(node, key, token(), LONG_TTL)).isEqualTo(f1 + 1);
    }
  }
}
