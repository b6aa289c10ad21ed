package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Redlock;
import io.redlock.RedlockBuilder;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * With restart quarantine off, a quorum whose nodes keep their locks in memory only is one crash
 * away from granting a held lock twice: the engine says so once, at WARN, right after build.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@DisplayName("The durability warning after build")
class DurabilityWarningTest {
  private static final String WARNING = "keep their locks in memory only";

  private final ByteArrayOutputStream log = new ByteArrayOutputStream();
  private PrintStream stderr;

  @BeforeEach
  void captureLog() {
    stderr = System.err; // slf4j-simple writes to the System.err of the moment
    System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restoreLog() {
    System.setErr(stderr);
    System.err.print(log.toString(StandardCharsets.UTF_8));
  }

  private List<String> warnings() {
    return log.toString(StandardCharsets.UTF_8).lines().filter(l -> l.contains(WARNING)).toList();
  }

  /** Builds, uses and closes a Redlock, then waits long enough for the check to have run. */
  private void buildAndWait(RedlockBuilder builder) throws InterruptedException {
    try (Redlock redlock = builder.build()) {
      redlock.tryAcquire("durability", Duration.ofSeconds(5)).ifPresent(l -> l.release());
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
      while (warnings().isEmpty() && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
    }
  }

  @Test
  @DisplayName("names every node without durable lock state once, when quarantine is off")
  void warnsOnceNamingTheNodes() throws Exception {
    try (RedisServers redis = RedisServers.start(2, RedisServer.builder());
        RedisServer durable = RedisServer.builder().appendOnly().start()) {
      List<String> uris = new java.util.ArrayList<>(redis.uris());
      uris.add(durable.uri());
      buildAndWait(Redlock.builder().nodeUris(uris));

      assertThat(warnings()).hasSize(1);
      String warning = warnings().get(0);
      assertThat(warning)
          .contains("WARN")
          .contains("2 of the 3 nodes that answered")
          .contains(redis.get(0).address())
          .contains(redis.get(1).address())
          .doesNotContain(durable.address())
          .contains("restartQuarantine");
    }
  }

  @Test
  @DisplayName("says nothing when restart quarantine is on, or when every node is durable")
  void silentWhenSafe() throws Exception {
    try (RedisServers memory = RedisServers.start(3, RedisServer.builder());
        RedisServers durable = RedisServers.start(3, RedisServer.builder().appendOnly())) {
      buildAndWait(
          Redlock.builder().nodeUris(memory.uris()).restartQuarantine(Duration.ofSeconds(5)));
      buildAndWait(Redlock.builder().nodeUris(durable.uris()));

      assertThat(warnings()).isEmpty();
    }
  }
}
