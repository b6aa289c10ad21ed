package io.redlock.mongo;

import static org.assertj.core.api.Assertions.assertThat;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import io.redlock.testservers.MongoServer;
import java.time.Duration;
import java.util.Date;
import java.util.UUID;
import org.bson.Document;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Expiry follows the server's clock, not the client's. The in-process stand-in shares this JVM's
 * clock, so it cannot tell the two apart; here the stand-in runs in its own JVM under libfaketime
 * with its wall clock an hour ahead or behind ours. A backend that computed expiry from the
 * client's clock would see every key as long expired (server ahead) or held for an extra hour
 * (server behind).
 */
@Timeout(120)
@DisplayName("MongoLockNode expiry runs on the server's clock")
class MongoServerClockTest {
  private static final Duration AWAIT = Duration.ofSeconds(10);
  private static final Duration TTL = Duration.ofMillis(3000);

  @ParameterizedTest(name = "server clock {0} s from the client's")
  @ValueSource(longs = {3600, -3600})
  @DisplayName("keys live for their TTL on a server whose clock is an hour off")
  void expiryFollowsServerClock(long offsetSeconds) throws InterruptedException {
    Assumptions.assumeTrue(
        MongoServer.canMoveClock(),
        "needs libfaketime (apt-get install -y libfaketime) to move the stand-in's clock");
    Duration offset = Duration.ofSeconds(offsetSeconds);
    try (MongoServer server = MongoServer.builder().clockOffset(offset).start();
        MongoClient raw = MongoClients.create(server.connectionString());
        MongoLockNode node = MongoLockNode.fromUri(server.connectionString())) {
      System.out.println("MongoServerClockTest on " + server.description());
      String key = "clock:" + UUID.randomUUID();
      String owner = UUID.randomUUID().toString();

      long start = System.nanoTime();
      assertThat(node.tryAcquire(key, owner, TTL).await(AWAIT).acquired()).isTrue();
      Document doc =
          raw.getDatabase(MongoLockNode.DEFAULT_DATABASE)
              .getCollection(MongoLockNode.DEFAULT_COLLECTION)
              .find(new Document("_id", key))
              .first();
      Date at = doc.getDate("at");
      long clientNow = System.currentTimeMillis();
      assertThat(at.getTime() - clientNow)
          .as("'at' was written by the server's (moved) clock")
          .isBetween(offset.toMillis() - 60_000, offset.toMillis() + 60_000);

      boolean heldEarly = !node.tryAcquire(key, "other", TTL).await(AWAIT).acquired();
      long checkedAfterMs = (System.nanoTime() - start) / 1_000_000;
      if (checkedAfterMs < TTL.toMillis() - 200) { // only meaningful if we were quick enough
        assertThat(heldEarly).as("held %d ms into a %s TTL", checkedAfterMs, TTL).isTrue();
      }
      boolean extended = node.extend(key, owner, TTL).await(AWAIT);
      long extendedAfterMs = (System.nanoTime() - start) / 1_000_000;
      if (extendedAfterMs < TTL.toMillis() - 500) { // a busy machine may take longer than the TTL
        assertThat(extended)
            .as("the owner extends %d ms into a %s TTL", extendedAfterMs, TTL)
            .isTrue();
      }

      // Bounded by count and time; generous for a busy machine, far below the hour a client-clock
      // bug would hold the key for.
      boolean acquiredLater = false;
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      for (int i = 0; i < 300 && !acquiredLater && System.nanoTime() < deadline; i++) {
        Thread.sleep(100);
        acquiredLater = node.tryAcquire(key, "late", TTL).await(AWAIT).acquired();
      }
      long elapsedMs = (System.nanoTime() - start) / 1_000_000;
      assertThat(acquiredLater)
          .as("the key expired by the server's clock within ~TTL, not an hour")
          .isTrue();
      assertThat(elapsedMs).as("ms until another token could acquire").isLessThan(31_000);
    }
  }
}
