package io.redlock.testservers;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

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

  /**
   * Set this system property to {@code true} to keep every server's files (data and log) under
   * {@code target/servers} after the server stops, to look at them after a failed test.
   */
  public static final String KEEP_FILES_PROPERTY = "redlock.test.keepServerFiles";

  /** Directories {@link #scratchDir} made; only these are ever deleted. */
  private static final Set<Path> SCRATCH = ConcurrentHashMap.newKeySet();

  /** Directories that live as long as the JVM (the template data directories). */
  private static final Set<Path> UNTIL_EXIT = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> UNTIL_EXIT.forEach(Binaries::deleteScratchDir), "delete-server-templates"));
  }

  /**
   * A fresh directory under the module's {@code target/servers} for one server's files. {@link
   * ManagedProcess} deletes it, with everything in it, once the server it started there has stopped
   * (unless {@value #KEEP_FILES_PROPERTY} is set): a PostgreSQL or MariaDB data directory is tens
   * of megabytes, and a suite starts hundreds of servers.
   */
  public static Path scratchDir(String prefix) {
    try {
      Path base =
          Path.of(System.getProperty(SCRATCH_BASE_PROPERTY, "target/servers")).toAbsolutePath();
      Files.createDirectories(base);
      Path dir = Files.createTempDirectory(base, prefix + "-");
      SCRATCH.add(dir);
      return dir;
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * System property: the folder the servers' scratch folders go in (default {@code
   * target/servers}), e.g. to test from a long path.
   */
  public static final String SCRATCH_BASE_PROPERTY = "redlock.test.scratchBase";

  /**
   * A short folder under the system's temp folder for a server's Unix socket: a socket's path is
   * limited to 107 bytes, and a scratch folder under a long checkout path passes that. Deleted when
   * the JVM exits.
   */
  static Path socketDir(String prefix) {
    try {
      Path dir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), prefix);
      SCRATCH.add(dir);
      UNTIL_EXIT.add(dir);
      return dir;
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** A {@link #scratchDir} deleted when the JVM exits: for files every server of the JVM copies. */
  static Path scratchDirUntilExit(String prefix) {
    Path dir = scratchDir(prefix);
    UNTIL_EXIT.add(dir);
    return dir;
  }

  /**
   * Deletes {@code dir} and everything in it if {@link #scratchDir} made it, and does nothing for
   * any other directory or when {@value #KEEP_FILES_PROPERTY} is set. Best effort: a file that
   * cannot be deleted is left, and the rest still go.
   */
  public static void deleteScratchDir(Path dir) {
    if (Boolean.getBoolean(KEEP_FILES_PROPERTY) || !SCRATCH.remove(dir)) {
      return;
    }
    try {
      Files.walkFileTree(
          dir,
          new java.nio.file.SimpleFileVisitor<>() {
            @Override
            public java.nio.file.FileVisitResult visitFile(
                Path file, java.nio.file.attribute.BasicFileAttributes attributes) {
              deleteQuietly(file);
              return java.nio.file.FileVisitResult.CONTINUE;
            }

            @Override
            public java.nio.file.FileVisitResult visitFileFailed(Path file, java.io.IOException e) {
              return java.nio.file.FileVisitResult.CONTINUE; // vanished meanwhile: go on
            }

            @Override
            public java.nio.file.FileVisitResult postVisitDirectory(
                Path directory, java.io.IOException e) {
              deleteQuietly(directory);
              return java.nio.file.FileVisitResult.CONTINUE;
            }
          });
    } catch (java.io.IOException e) {
      // what is left stays under target/
    }
  }

  private static void deleteQuietly(Path path) {
    try {
      Files.deleteIfExists(path);
    } catch (java.io.IOException e) {
      // best effort: a directory a process still writes to may not be empty yet
    }
  }
}
