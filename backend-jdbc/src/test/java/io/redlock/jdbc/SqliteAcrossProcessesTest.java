package io.redlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

@DisplayName("SQLite across processes")
class SqliteAcrossProcessesTest {
  private static final int INCREMENTS = 40;

  @Test
  @DisplayName("two JVMs contending on one file keep mutual exclusion: no increment is lost")
  void twoJvmsKeepMutualExclusion() throws Exception {
    String url = TestDatabases.sqliteUrl("processes");
    Path dir = Path.of("target", "sqlite").toAbsolutePath();
    Path counter = Files.createTempFile(dir, "counter", ".txt");
    Files.writeString(counter, "0");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<Process> processes = new ArrayList<>();
    try {
      for (int i = 0; i < 2; i++) {
        Path log = dir.resolve("contender-" + i + "-" + counter.getFileName() + ".log");
        processes.add(
            new ProcessBuilder(
                    java,
                    "-cp",
                    System.getProperty("java.class.path"),
                    SqliteContender.class.getName(),
                    url,
                    counter.toString(),
                    Integer.toString(INCREMENTS))
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start());
      }
      for (int i = 0; i < processes.size(); i++) {
        Process p = processes.get(i);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("contender %d finished", i).isTrue();
        Path log = dir.resolve("contender-" + i + "-" + counter.getFileName() + ".log");
        assertThat(p.exitValue())
            .as("contender %d exit code; log:%n%s", i, Files.readString(log))
            .isZero();
      }
      assertThat(Files.readString(counter).strip()).isEqualTo(Integer.toString(2 * INCREMENTS));
    } finally {
      processes.forEach(Process::destroyForcibly);
    }
  }
}
