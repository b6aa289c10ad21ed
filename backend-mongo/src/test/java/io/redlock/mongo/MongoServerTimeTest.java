package io.redlock.mongo;

import static org.assertj.core.api.Assertions.assertThat;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import io.redlock.testservers.MongoServer;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import org.bson.Document;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code serverTime()} is the server's {@code localTime}: what {@code hello} answers on MongoDB
 * 4.4.2+ and {@code isMaster} on older servers and on the mongo-java-server stand-in (which has no
 * {@code hello}, and answers the clock of the JVM it runs in). Run in its own JVM under
 * libfaketime, the stand-in shows the moved clock.
 */
@Timeout(120)
@DisplayName("MongoLockNode.serverTime() reads the server's localTime")
class MongoServerTimeTest {
  private static final Duration AWAIT = Duration.ofSeconds(10);

  @ParameterizedTest(name = "on {0}")
  @EnumSource(MongoTarget.class)
  @DisplayName("lies between two localTime reads of a plain client")
  void agreesWithLocalTime(MongoTarget target) {
    try (MongoServer server = target.start("MongoServerTimeTest");
        MongoClient raw = MongoClients.create(server.connectionString());
        MongoLockNode node = MongoLockNode.fromUri(server.connectionString())) {
      node.serverTime().await(AWAIT); // the first call connects
      for (int i = 0; i < 3; i++) {
        Instant before = localTime(raw);
        Instant read = node.serverTime().await(AWAIT);
        Instant after = localTime(raw);
        assertThat(read).isBetween(before, after);
        assertThat(Duration.between(read, Instant.now()).abs())
            .as("a server on this machine")
            .isLessThan(Duration.ofSeconds(2));
      }
    }
  }

  /** {@code localTime} as a plain client reads it: isMaster, which every server answers. */
  private static Instant localTime(MongoClient raw) {
    Document answer = raw.getDatabase("admin").runCommand(new Document("isMaster", 1));
    return answer.get("localTime", Date.class).toInstant();
  }

  @Test
  @DisplayName("shows the offset of a stand-in whose clock libfaketime moved 30 s ahead")
  void showsMovedClock() {
    Assumptions.assumeTrue(
        MongoServer.canMoveClock(),
        "needs libfaketime (apt-get install -y libfaketime) to move the stand-in's clock");
    Duration moved = Duration.ofSeconds(30);
    try (MongoServer server = MongoServer.builder().clockOffset(moved).start();
        MongoLockNode node = MongoLockNode.fromUri(server.connectionString())) {
      System.out.println("MongoServerTimeTest on " + server.description());
      Instant before = Instant.now();
      Instant read = node.serverTime().await(AWAIT);
      Instant after = Instant.now();
      Duration offset =
          Duration.between(before.plus(Duration.between(before, after).dividedBy(2)), read);
      assertThat(offset)
          .as("stand-in read %s between %s and %s on this machine", read, before, after)
          .isBetween(moved.minusSeconds(3), moved.plusSeconds(3));
    }
  }
}
