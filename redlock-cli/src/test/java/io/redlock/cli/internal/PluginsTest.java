package io.redlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.spi.LockNodes;
import java.io.File;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@DisplayName("REDLOCK_CLASSPATH")
class PluginsTest {
  private final ClassLoader parent = PluginsTest.class.getClassLoader();

  @Test
  @DisplayName("unset or blank adds nothing")
  void unset() {
    assertThat(Plugins.loader(null, parent)).isSameAs(parent);
    assertThat(Plugins.loader(" ", parent)).isSameAs(parent);
  }

  @Test
  @DisplayName("takes jars and folders as java -cp does, 'dir/*' for every jar in dir")
  void entries(@TempDir Path dir) throws Exception {
    Path jars = Files.createDirectories(dir.resolve("plugins"));
    Files.createFile(jars.resolve("b.jar"));
    Files.createFile(jars.resolve("a.jar"));
    Files.createFile(jars.resolve("notes.txt"));
    Path classes = Files.createDirectories(dir.resolve("classes"));
    String classpath =
        classes + File.pathSeparator + File.pathSeparator + jars + File.separator + "*";
    try (URLClassLoader loader = (URLClassLoader) Plugins.loader(classpath, parent)) {
      assertThat(loader.getParent()).isSameAs(parent);
      assertThat(loader.getURLs())
          .extracting(url -> Path.of(url.toURI()).getFileName().toString())
          .containsExactly("classes", "a.jar", "b.jar");
    }
  }

  @Test
  @DisplayName("an entry that does not exist is a usage error naming it")
  void missing(@TempDir Path dir) {
    assertThatThrownBy(() -> Plugins.loader(dir.resolve("gone.jar").toString(), parent))
        .isInstanceOf(CliException.class)
        .hasMessageContaining("REDLOCK_CLASSPATH entry")
        .hasMessageContaining("gone.jar")
        .satisfies(e -> assertThat(((CliException) e).exitCode()).isEqualTo(ExitCodes.USAGE));
  }

  @Test
  @DisplayName("doctor's list says which jar or folder each backend came from")
  void describe() {
    assertThat(Plugins.describe(LockNodes.discover()))
        .anySatisfy(
            b -> {
              assertThat(b.schemes()).contains("redis", "rediss");
              assertThat(b.loadedFrom()).contains("backend-redis");
            });
  }
}
