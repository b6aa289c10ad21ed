package io.redlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.spi.LockNode;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * A third party's backend in the tool, added the documented way: the jar of {@code
 * examples/backend-template}, built outside the reactor from its sources against {@code
 * redlock-api} alone, on {@code REDLOCK_CLASSPATH}.
 */
@DisplayName("a backend jar built outside the project works in the redlock tool")
class PluginIT {
  private static final String NODES = "example://a,example://b,example://c";
  private Path dir;

  @BeforeEach
  void setUp(TestInfo info) throws IOException {
    dir = CliProcess.testDir(info);
  }

  @Test
  @DisplayName("exec locks on its nodes, and doctor says where the backend was loaded from")
  void templateJarOnRedlockClasspath() throws Exception {
    Path jar = templateJar();
    Map<String, String> env = Map.of("REDLOCK_CLASSPATH", jar.toString());
    try (CliProcess p =
        CliProcess.start(
            dir,
            env,
            "exec",
            "--nodes",
            NODES,
            "job",
            "--",
            "sh",
            "-c",
            "echo held $REDLOCK_LOCK_NAME")) {
      assertThat(p.exitCode()).as(p.toString()).isZero();
      assertThat(p.out()).as(p.toString()).contains("held job");
    }
    try (CliProcess p = CliProcess.start(dir, env, "doctor", "--nodes", NODES)) {
      p.exitCode();
      assertThat(p.out())
          .as(p.toString())
          .contains("example: loaded from " + jar)
          .containsPattern("redis, rediss: loaded from .*redlock\\.jar");
    }
  }

  @Test
  @DisplayName("without it the scheme is unknown, and the error says where backends come from")
  void withoutThePlugin() {
    try (CliProcess p =
        CliProcess.start(dir, Map.of(), "exec", "--nodes", NODES, "job", "--", "true")) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err()).contains("no backend for scheme 'example'", "REDLOCK_CLASSPATH");
    }
  }

  @Test
  @DisplayName("an entry that does not exist is a usage error naming it")
  void missingEntry() {
    Map<String, String> env = Map.of("REDLOCK_CLASSPATH", dir.resolve("nothing.jar").toString());
    try (CliProcess p = CliProcess.start(dir, env, "doctor", "--nodes", NODES)) {
      assertThat(p.exitCode()).as(p.toString()).isEqualTo(64);
      assertThat(p.err()).contains("REDLOCK_CLASSPATH entry", "nothing.jar");
    }
  }

  /** Compiles the template's main sources and packs them with its resources, as its build does. */
  private Path templateJar() throws IOException, URISyntaxException {
    Path template = Path.of("..", "examples", "backend-template").toAbsolutePath().normalize();
    Path classes = Files.createDirectories(dir.resolve("classes"));
    String api =
        Path.of(LockNode.class.getProtectionDomain().getCodeSource().getLocation().toURI())
            .toString();
    List<String> args =
        new ArrayList<>(List.of("--release", "17", "-cp", api, "-d", classes.toString()));
    try (Stream<Path> sources = Files.walk(template.resolve("src/main/java"))) {
      sources.filter(f -> f.toString().endsWith(".java")).forEach(f -> args.add(f.toString()));
    }
    assertThat(
            ToolProvider.getSystemJavaCompiler().run(null, null, null, args.toArray(String[]::new)))
        .as("javac of the template's sources")
        .isZero();
    Path jar = dir.resolve("redlock-backend-example.jar");
    try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
      for (Path root : List.of(classes, template.resolve("src/main/resources"))) {
        try (Stream<Path> files = Files.walk(root)) {
          for (Path f : files.filter(Files::isRegularFile).toList()) {
            out.putNextEntry(new JarEntry(root.relativize(f).toString().replace('\\', '/')));
            Files.copy(f, (OutputStream) out);
            out.closeEntry();
          }
        }
      }
    }
    return jar;
  }
}
