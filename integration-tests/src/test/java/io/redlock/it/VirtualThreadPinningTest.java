package io.redlock.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServers;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Redis and JDBC paths (acquire, extend, release, the Lock adapter contended, keep-alive) run
 * on virtual threads without pinning them: a JVM of Java 21 or later runs {@link
 * VirtualThreadsMain}, which records JFR's {@code jdk.VirtualThreadPinned} event at a 0 ms
 * threshold (after a warm-up on platform threads, so that one-time class initialization and loading
 * are not counted; a class still loaded first on a virtual thread is reported and ignored), and the
 * recording holds none. The library holds no monitor around a blocking call (locks it blocks under
 * are ReentrantLocks), which is what pins on Java 21 to 23; from Java 24 on, a monitor no longer
 * pins, and the event still reports pinning by native frames.
 *
 * <p>The JDK is {@code -Dredlock.test.jdk21=...} (a Java home), or the newest under {@code
 * /usr/lib/jvm} of version 21 or later; without one the test is skipped, saying so.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@DisplayName("Virtual threads")
class VirtualThreadPinningTest {

  @Test
  @DisplayName("are never pinned on the Redis and JDBC paths")
  void noPinning(@TempDir Path dir) throws Exception {
    Optional<Path> java = newJava();
    assumeTrue(java.isPresent(), "no JDK 21 or later found (set -Dredlock.test.jdk21=JAVA_HOME)");
    try (RedisServers redis = RedisServers.start(3);
        PostgresServer pg = PostgresServer.startLocal()) {
      List<String> uris = new ArrayList<>(redis.uris());
      uris.add(pg.jdbcUrl() + "&redlock.createTable=true");
      Path recording = dir.resolve("pinning.jfr");
      List<String> command = new ArrayList<>();
      command.add(java.get().toString());
      command.add("-cp");
      command.add(classPath());
      command.add(VirtualThreadsMain.class.getName());
      command.add(recording.toString());
      command.addAll(uris);
      Process p =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("out.txt").toFile())
              .start();
      boolean ended = p.waitFor(4, TimeUnit.MINUTES);
      if (!ended) {
        p.destroyForcibly();
      }
      String out = Files.readString(dir.resolve("out.txt"), StandardCharsets.UTF_8);
      String pinned =
          out.lines()
              .filter(l -> l.startsWith("PINNED") || l.startsWith("virtual threads"))
              .toList()
              .toString();
      System.out.println("on " + java.get() + ": " + pinned);
      assertThat(ended).as("the virtual-thread run ended; output:%n%s", out).isTrue();
      assertThat(out).as("output").contains("virtual threads done: 0 pinned");
      assertThat(p.exitValue()).isZero();
    }
  }

  private static String classPath() {
    String surefire = System.getProperty("surefire.test.class.path");
    return surefire != null && !surefire.isBlank()
        ? surefire
        : System.getProperty("java.class.path");
  }

  /** A {@code bin/java} of version 21 or later. */
  private static Optional<Path> newJava() throws IOException {
    String given = System.getProperty("redlock.test.jdk21");
    if (given != null && !given.isBlank()) {
      return Optional.of(Path.of(given, "bin", "java"));
    }
    Path jvms = Path.of("/usr/lib/jvm");
    if (!Files.isDirectory(jvms)) {
      return Optional.empty();
    }
    try (Stream<Path> homes = Files.list(jvms)) {
      return homes
          .filter(
              h ->
                  Files.isExecutable(h.resolve("bin/java"))
                      && Files.isExecutable(h.resolve("bin/jfr")))
          .filter(h -> majorVersion(h) >= 21)
          .max(java.util.Comparator.comparingInt(VirtualThreadPinningTest::majorVersion))
          .map(h -> h.resolve("bin/java"));
    }
  }

  /** The major version in a Java home's {@code release} file, or 0. */
  private static int majorVersion(Path home) {
    try {
      for (String line : Files.readAllLines(home.resolve("release"))) {
        if (line.startsWith("JAVA_VERSION=")) {
          String v = line.substring("JAVA_VERSION=".length()).replace("\"", "");
          return Integer.parseInt(v.split("[.+-]")[0]);
        }
      }
    } catch (IOException | RuntimeException e) {
      // not a JDK we can read
    }
    return 0;
  }
}
