package io.redlock.testservers;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** Finds server executables on the PATH and in the usual Debian locations. */
public final class Binaries {
  private Binaries() {}

  /** The first executable named {@code name} on the PATH or in {@code extraDirs}. */
  public static Optional<Path> find(String name, String... extraDirs) {
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(File.pathSeparator)) {
      Optional<Path> hit = executable(Path.of(dir.isEmpty() ? "." : dir, name));
      if (hit.isPresent()) {
        return hit;
      }
    }
    for (String dir : extraDirs) {
      Optional<Path> hit = executable(Path.of(dir, name));
      if (hit.isPresent()) {
        return hit;
      }
    }
    return Optional.empty();
  }

  private static Optional<Path> executable(Path candidate) {
    return Files.isRegularFile(candidate) && Files.isExecutable(candidate)
        ? Optional.of(candidate)
        : Optional.empty();
  }

  /** A fresh directory under the module's {@code target/servers} for one server's files. */
  public static Path scratchDir(String prefix) {
    try {
      Path base = Path.of("target", "servers").toAbsolutePath();
      Files.createDirectories(base);
      return Files.createTempDirectory(base, prefix + "-");
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
