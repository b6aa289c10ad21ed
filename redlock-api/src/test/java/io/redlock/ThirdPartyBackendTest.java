package io.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodes;
import io.redlock.spi.testproviders.CapturingEngineProvider;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A backend written by someone else, compiled here from source into its own jar that this project
 * never saw, is picked up from the class path with no change to any code of this project.
 */
@DisplayName("A third-party backend jar")
class ThirdPartyBackendTest {

  private static final String NODE =
      """
      package com.example.thirdparty;

      import io.redlock.spi.*;
      import io.redlock.spi.support.*;
      import java.time.Duration;
      import java.util.concurrent.ConcurrentHashMap;

      public final class ThirdPartyNode implements LockNode {
        private final String name;
        private final ConcurrentHashMap<String, String> keys = new ConcurrentHashMap<>();

        ThirdPartyNode(String name) { this.name = name; }

        public String name() { return name; }

        public NodeCapabilities capabilities() { return NodeCapabilities.millisecondPrecision(); }

        public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
          LockNodeArguments.requireKey(key);
          LockNodeArguments.requireToken(token);
          LockNodeArguments.requireTtl(ttl, capabilities());
          return Reply.of(AcquireResult.of(keys.putIfAbsent(key, token) == null));
        }

        public Reply<Boolean> release(String key, String token) {
          return Reply.of(keys.remove(key, token));
        }

        public Reply<Boolean> extend(String key, String token, Duration ttl) {
          return Reply.of(token.equals(keys.get(key)));
        }

        public void close() {}
      }
      """;

  private static final String PROVIDER =
      """
      package com.example.thirdparty;

      import io.redlock.spi.*;
      import java.util.Set;

      public final class ThirdPartyProvider implements LockNodeProvider {
        public Set<String> schemes() { return Set.of("thirdparty"); }

        public LockNode open(NodeUri uri) { return new ThirdPartyNode("third party " + uri); }
      }
      """;

  @Test
  @DisplayName(
      "is used by Redlock.builder().nodes(\"thirdparty://x\") once it is on the class path")
  void pickedUpWithNoCodeChange(@TempDir Path dir) throws Exception {
    Path jar = buildJar(dir);

    assertThatThrownBy(() -> Redlock.builder().nodes("thirdparty://x"))
        .as("before the jar is on the class path")
        .hasMessageContaining("no backend for scheme 'thirdparty'");

    try (URLClassLoader plugin =
        new URLClassLoader(new URL[] {jar.toUri().toURL()}, getClass().getClassLoader())) {
      ClassLoader previous = Thread.currentThread().getContextClassLoader();
      Thread.currentThread().setContextClassLoader(plugin);
      try (Redlock redlock = Redlock.builder().nodes("thirdparty://x").build()) {
        assertThat(redlock.nodes()).containsExactly("third party thirdparty://x");
        LockNode node = ((CapturingEngineProvider.Captured) redlock).config().nodes().get(0);
        assertThat(node.getClass().getName()).isEqualTo("com.example.thirdparty.ThirdPartyNode");
        assertThat(node.getClass().getClassLoader()).isSameAs(plugin);
        assertThat(node.tryAcquire("k", "t1", Duration.ofSeconds(1)).await(Duration.ofSeconds(1)))
            .isEqualTo(AcquireResult.ACQUIRED);
        assertThat(node.tryAcquire("k", "t2", Duration.ofSeconds(1)).await(Duration.ofSeconds(1)))
            .isEqualTo(AcquireResult.HELD);
      } finally {
        Thread.currentThread().setContextClassLoader(previous);
      }

      assertThat(LockNodes.load(plugin).schemes()).contains("thirdparty", "test-mem");
      assertThat(LockNodes.load(getClass().getClassLoader()).schemes())
          .doesNotContain("thirdparty");
      try (Redlock viaLoader =
          Redlock.builder().lockNodes(LockNodes.load(plugin)).nodes("thirdparty://y").build()) {
        assertThat(viaLoader.nodes()).containsExactly("third party thirdparty://y");
      }
    }
  }

  /** Compiles the provider against this module's classes and packs it with its service file. */
  private static Path buildJar(Path dir) throws IOException, URISyntaxException {
    Path src = dir.resolve("src/com/example/thirdparty");
    Files.createDirectories(src);
    Files.writeString(src.resolve("ThirdPartyNode.java"), NODE);
    Files.writeString(src.resolve("ThirdPartyProvider.java"), PROVIDER);
    Path classes = Files.createDirectories(dir.resolve("classes"));
    Path api = Path.of(LockNode.class.getProtectionDomain().getCodeSource().getLocation().toURI());

    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    assertThat(javac).as("a JDK compiler (tests run on a JDK)").isNotNull();
    int rc =
        javac.run(
            null,
            null,
            null,
            "--release",
            "17",
            "-classpath",
            api.toString(),
            "-d",
            classes.toString(),
            src.resolve("ThirdPartyNode.java").toString(),
            src.resolve("ThirdPartyProvider.java").toString());
    assertThat(rc).as("javac exit code").isZero();

    Path jar = dir.resolve("thirdparty-backend.jar");
    try (OutputStream out = Files.newOutputStream(jar);
        JarOutputStream jarOut = new JarOutputStream(out)) {
      jarOut.putNextEntry(new JarEntry("META-INF/services/io.redlock.spi.LockNodeProvider"));
      jarOut.write("com.example.thirdparty.ThirdPartyProvider\n".getBytes(StandardCharsets.UTF_8));
      jarOut.closeEntry();
      List<Path> files;
      try (Stream<Path> walk = Files.walk(classes)) {
        files = walk.filter(Files::isRegularFile).toList();
      }
      for (Path file : files) {
        jarOut.putNextEntry(new JarEntry(classes.relativize(file).toString().replace('\\', '/')));
        jarOut.write(Files.readAllBytes(file));
        jarOut.closeEntry();
      }
    }
    return jar;
  }
}
