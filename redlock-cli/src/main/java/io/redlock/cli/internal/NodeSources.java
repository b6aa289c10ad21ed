package io.redlock.cli.internal;

import io.redlock.ConfiguredNodes;
import io.redlock.spi.NodeUri;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Reading the node URIs the user wrote: config files, ports, and passwords written out rather than
 * referred to.
 */
final class NodeSources {
  private NodeSources() {}

  /** A reference to an environment variable inside a node URI: {@code ${NAME}}. */
  private static final Pattern VARIABLE = Pattern.compile("\\$\\{([A-Za-z_][A-Za-z0-9_]*)\\}");

  /**
   * {@code uri} with a reference to an environment variable where its password is, in the URI's own
   * form: {@code redis://:${REDIS_PASSWORD}@host:6379}, {@code
   * postgresql://u:${POSTGRESQL_PASSWORD}@host/db}, {@code
   * jdbc:mariadb://host/db?user=u&password=${MARIADB_PASSWORD}}.
   */
  static String passwordFromVariable(String uri) {
    String scheme;
    try {
      scheme = NodeUri.parse(uri).scheme();
    } catch (RuntimeException e) {
      scheme = "node";
    }
    String variable =
        scheme
                .substring(scheme.lastIndexOf(':') + 1)
                .toUpperCase(java.util.Locale.ROOT)
                .replaceAll("[^A-Z0-9]", "_")
            + "_PASSWORD";
    return NodeUri.redactUri(uri).replace("***", "${" + variable + "}");
  }

  /**
   * Whether {@code text} holds a password or other secret written out, rather than a {@code ${VAR}}
   * reference to one: what redaction would hide, once the references count as hidden already.
   */
  static boolean holdsPassword(String text) {
    String references = VARIABLE.matcher(text).replaceAll("***");
    return !NodeUri.redact(references).equals(references);
  }

  /**
   * A URI's port must be a number from 1 to 65535: {@code redis://127.0.0.1:notaport} is refused
   * here, naming the port, since a backend's URI parser would only see "no host" in it.
   */
  static void checkPorts(String uri, NodeOptions.Selection selection) {
    int scheme = uri.indexOf("://");
    if (scheme < 0) {
      return;
    }
    String rest = uri.substring(scheme + 3);
    int query = indexOfAny(rest, "?#");
    int at = rest.lastIndexOf('@', query);
    String hosts = rest.substring(at + 1);
    hosts = hosts.substring(0, indexOfAny(hosts, "/?#"));
    for (String host : hosts.split(",")) {
      String port;
      if (host.startsWith("[")) {
        int close = host.indexOf("]:");
        port = close < 0 ? "" : host.substring(close + 2);
      } else {
        int colon = host.lastIndexOf(':');
        port = colon < 0 ? "" : host.substring(colon + 1);
      }
      if (port.isEmpty()) {
        continue;
      }
      // The port is never quoted: in a URI whose password holds an '@' or ':', it is a piece of
      // the password.
      if (!port.matches("\\d{1,9}")
          || Integer.parseInt(port) < 1
          || Integer.parseInt(port) > 65_535) {
        throw new CliException(
            ExitCodes.USAGE,
            NodeOptions.withSource(
                "node URI '%s' has a bad port: the port is not a number from 1 to 65535, e.g."
                        .formatted(NodeUri.redactUri(uri))
                    + " redis://127.0.0.1:6379 (percent-encode '@', ':' and '/' in a password)",
                selection == null
                    ? new NodeOptions.Selection(List.of(), "?", false, null, null)
                    : selection));
      }
    }
  }

  private static int indexOfAny(String s, String chars) {
    for (int i = 0; i < s.length(); i++) {
      if (chars.indexOf(s.charAt(i)) >= 0) {
        return i;
      }
    }
    return s.length();
  }

  static NodeOptions.Selection fromConfigFile(Path file, String namedBy, PrintStream err) {
    Properties p = ConfiguredNodes.readProperties(file, namedBy);
    Set<String> unknown = new TreeSet<>(p.stringPropertyNames());
    unknown.removeAll(NodeOptions.CONFIG_KEYS);
    if (!unknown.isEmpty()) {
      throw CliException.usage(
          "the config file %s has unknown keys %s; known keys: %s",
          file, unknown, new TreeSet<>(NodeOptions.CONFIG_KEYS));
    }
    String nodesValue = p.getProperty("nodes");
    if (nodesValue != null && holdsPassword(nodesValue)) {
      warnIfReadableByOthers(file, err);
    }
    ConfiguredNodes c = ConfiguredNodes.fromFile(file, namedBy);
    Duration timeout = null;
    if (p.getProperty("node-timeout") != null) {
      try {
        timeout = Durations.parse(p.getProperty("node-timeout"));
      } catch (IllegalArgumentException e) {
        throw new CliException(
            ExitCodes.USAGE, "node-timeout in " + file + ": " + e.getMessage(), e);
      }
    }
    Double drift = null;
    if (p.getProperty("drift-factor") != null) {
      try {
        drift = Double.valueOf(p.getProperty("drift-factor").strip());
      } catch (NumberFormatException e) {
        throw CliException.usage(
            "drift-factor in %s must be a number such as 0.01, got '%s'",
            file, p.getProperty("drift-factor"));
      }
    }
    return new NodeOptions.Selection(c.uris(), c.source(), false, timeout, drift);
  }

  /** A config file that holds a password should be readable by its owner only, as ssh wants. */
  private static void warnIfReadableByOthers(Path file, PrintStream err) {
    try {
      Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
      if (perms.contains(PosixFilePermission.GROUP_READ)
          || perms.contains(PosixFilePermission.OTHERS_READ)) {
        err.printf(
            "redlock: warning: the config file %s holds a password and others can read it; chmod"
                + " 600 %1$s%n",
            file);
      }
    } catch (IOException | UnsupportedOperationException e) {
      // not a POSIX file system: nothing to check
    }
  }
}
