package io.redlock.cli.internal;

import io.redlock.RedlockException;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.LockNodes;
import io.redlock.spi.NodeUri;
import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Third-party backends for the tool: jars and class folders named by {@value #ENV}, loaded in a
 * class loader of their own (below the tool's, so that they share its {@code redlock-api}) that
 * becomes the context class loader, where {@link LockNodes#discover()} looks for providers.
 */
final class Plugins {
  /** The variable: entries separated by the path separator, as in {@code java -cp}. */
  static final String ENV = "REDLOCK_CLASSPATH";

  private Plugins() {}

  /**
   * The class loader for {@code classpath} (the value of {@value #ENV}): {@code parent} itself if
   * it is unset or blank.
   *
   * @throws CliException (usage) for an entry that does not exist
   */
  static ClassLoader loader(String classpath, ClassLoader parent) {
    if (classpath == null || classpath.isBlank()) {
      return parent;
    }
    List<URL> urls = new ArrayList<>();
    for (String entry : classpath.split(File.pathSeparator)) {
      if (entry.isBlank()) {
        continue;
      }
      boolean allJars = entry.equals("*") || entry.endsWith(File.separator + "*");
      Path path =
          Path.of(allJars ? entry.substring(0, entry.length() - 1) : entry).toAbsolutePath();
      try {
        if (!Files.exists(path)) {
          throw new IOException("no such file or folder");
        }
        if (!allJars) {
          urls.add(path.toUri().toURL());
          continue;
        }
        try (Stream<Path> files = Files.list(path)) {
          for (Path jar : files.filter(f -> f.toString().endsWith(".jar")).sorted().toList()) {
            urls.add(jar.toUri().toURL());
          }
        }
      } catch (IOException e) {
        throw new CliException(
            ExitCodes.USAGE, ENV + " entry '" + entry + "' cannot be read: " + e.getMessage(), e);
      }
    }
    return new URLClassLoader("redlock-plugins", urls.toArray(URL[]::new), parent);
  }

  /**
   * One backend as discovered: the schemes its provider claims and where its classes came from.
   *
   * @param schemes the URI schemes it opens
   * @param provider the provider's class name
   * @param loadedFrom the jar or folder the provider's class was loaded from
   */
  record Backend(List<String> schemes, String provider, String loadedFrom) {}

  /** Every backend {@code backends} found, in the order of their first scheme. */
  static List<Backend> describe(LockNodes backends) {
    Map<LockNodeProvider, List<String>> byProvider = new LinkedHashMap<>();
    for (String scheme : backends.schemes()) {
      if (!driverPresent(scheme)) {
        continue; // e.g. jdbc:mysql: backend-jdbc opens it, but no driver in the jar accepts it
      }
      try {
        LockNodeProvider p = backends.providerFor(NodeUri.parse(scheme + ":"));
        byProvider.computeIfAbsent(p, k -> new ArrayList<>()).add(scheme);
      } catch (RedlockException e) {
        // claimed by two providers: LockNodes.problems() says so
      }
    }
    List<Backend> out = new ArrayList<>();
    byProvider.forEach(
        (p, schemes) ->
            out.add(new Backend(schemes, p.getClass().getName(), origin(p.getClass()))));
    return out;
  }

  /**
   * Whether a node of {@code scheme} can be opened here: for a {@code jdbc:} scheme, whether a JDBC
   * driver on the class path (the jar's, or one from {@value #ENV}) accepts its URLs; other schemes
   * need no driver of their own.
   */
  static boolean driverPresent(String scheme) {
    if (!scheme.startsWith("jdbc:")) {
      return true;
    }
    String[] samples = {scheme + "://localhost/redlock", scheme + ":redlock"};
    ClassLoader loader = Thread.currentThread().getContextClassLoader();
    for (java.util.Iterator<java.sql.Driver> drivers =
            java.util.ServiceLoader.load(java.sql.Driver.class, loader).iterator();
        ; ) {
      java.sql.Driver driver;
      try {
        if (!drivers.hasNext()) {
          return false;
        }
        driver = drivers.next();
      } catch (java.util.ServiceConfigurationError e) {
        continue; // a driver that cannot be loaded accepts nothing
      }
      for (String url : samples) {
        try {
          if (driver.acceptsURL(url)) {
            return true;
          }
        } catch (java.sql.SQLException | RuntimeException e) {
          // does not accept it
        }
      }
    }
  }

  /**
   * A library message's "Schemes available: a, b, c" without the schemes whose driver is missing
   * ({@link #driverPresent}): the tool offers only what it can open.
   */
  static String usableSchemesOnly(String message) {
    String label = "Schemes available: ";
    int start = message == null ? -1 : message.indexOf(label);
    if (start < 0) {
      return message;
    }
    int from = start + label.length();
    int end = message.indexOf(". ", from);
    end = end < 0 ? message.length() : end;
    List<String> usable = new ArrayList<>();
    for (String scheme : message.substring(from, end).split(", ")) {
      if (driverPresent(scheme.strip())) {
        usable.add(scheme);
      }
    }
    return message.substring(0, from) + String.join(", ", usable) + message.substring(end);
  }

  private static String origin(Class<?> c) {
    var source = c.getProtectionDomain().getCodeSource();
    if (source == null || source.getLocation() == null) {
      return String.valueOf(c.getClassLoader());
    }
    try {
      return Path.of(source.getLocation().toURI()).toString();
    } catch (URISyntaxException | IllegalArgumentException e) {
      return source.getLocation().toString();
    }
  }
}
