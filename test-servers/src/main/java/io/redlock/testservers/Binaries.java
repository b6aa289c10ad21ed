package io.redlock.testservers;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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

  /** Where Debian and others install libfaketime's preload library. */
  private static final List<String> LIBFAKETIME =
      List.of(
          "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
          "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
          "/usr/lib/faketime/libfaketime.so.1",
          "/usr/local/lib/faketime/libfaketime.so.1");

  /**
   * libfaketime's preload library ({@code apt-get install -y libfaketime}), for starting a server
   * with its wall clock moved: {@code LD_PRELOAD=<it> FAKETIME=+30}.
   */
  public static Optional<Path> libfaketime() {
    return LIBFAKETIME.stream().map(Path::of).filter(Files::isReadable).findFirst();
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
