package io.redlock.jdbc;

import io.redlock.RedlockTransientException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;

/**
 * One contender of the cross-process SQLite test, run in its own JVM: increments a counter in a
 * plain file (read, pause, write: not atomic) a number of times, each time under the lock.
 * Arguments: JDBC URL, counter file, increments.
 */
public final class SqliteContender {
  private SqliteContender() {}

  /** Runs the contender; exits non-zero on any failure. */
  public static void main(String[] args) throws Exception {
    String url = args[0];
    Path counter = Path.of(args[1]);
    int increments = Integer.parseInt(args[2]);
    long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
    try (JdbcLockNode node = JdbcLockNode.builder(url).createTable(true).build()) {
      for (int i = 0; i < increments; i++) {
        String token = UUID.randomUUID().toString();
        while (!acquired(node, token)) {
          if (System.nanoTime() - deadline > 0) {
            throw new IllegalStateException("gave up waiting for the lock");
          }
          Thread.sleep(2);
        }
        int value = Integer.parseInt(Files.readString(counter).strip());
        Thread.sleep(3); // widen the window in which a second holder would lose an update
        Files.writeString(counter, Integer.toString(value + 1));
        if (!released(node, token, deadline)) {
          throw new IllegalStateException("lost the lock while holding it");
        }
      }
    }
  }

  /** One acquire; a transient failure (the other JVM holds SQLite's write lock) means "retry". */
  private static boolean acquired(JdbcLockNode node, String token) {
    try {
      return node.tryAcquire("counter", token, Duration.ofSeconds(30))
          .await(Duration.ofSeconds(30))
          .acquired();
    } catch (RedlockTransientException busy) {
      return false;
    }
  }

  /** Release, retrying transient failures until the deadline. */
  private static boolean released(JdbcLockNode node, String token, long deadline)
      throws InterruptedException {
    while (true) {
      try {
        return node.release("counter", token).await(Duration.ofSeconds(30));
      } catch (RedlockTransientException busy) {
        if (System.nanoTime() - deadline > 0) {
          throw busy;
        }
        Thread.sleep(2);
      }
    }
  }
}
