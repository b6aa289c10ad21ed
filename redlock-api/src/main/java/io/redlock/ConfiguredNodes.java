package io.redlock;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * Node URIs configured outside the code, and where they came from: a system property, an
 * environment variable, or a properties file ({@link RedlockBuilder#nodesFromEnvironment()} and the
 * {@code redlock} tool read them the same way).
 *
 * @param uris the URIs, in order
 * @param source where they were found, e.g. "environment variable REDLOCK_NODES"
 */
public record ConfiguredNodes(List<String> uris, String source) {

  /** Environment variable holding the node URIs, e.g. {@code redis://a:6379,redis://b:6379}. */
  public static final String NODES_ENV = "REDLOCK_NODES";

  /** System property holding the node URIs; takes precedence over {@link #NODES_ENV}. */
  public static final String NODES_PROPERTY = "redlock.nodes";

  /** Environment variable naming a properties file with a {@code nodes=...} entry. */
  public static final String CONFIG_ENV = "REDLOCK_CONFIG";

  /** System property naming a properties file; takes precedence over {@link #CONFIG_ENV}. */
  public static final String CONFIG_PROPERTY = "redlock.config";

  /** The key holding the node URIs in a properties file. */
  public static final String NODES_KEY = "nodes";

  /** Where a comma starts a new URI rather than continuing one (MongoDB seed lists use commas). */
  private static final Pattern URI_START =
      Pattern.compile("(?i)(?:jdbc:[a-z0-9]|[a-z][a-z0-9+.-]*://).*", Pattern.DOTALL);

  /** A reference to an environment variable inside a node URI: {@code ${NAME}}. */
  private static final Pattern VARIABLE = Pattern.compile("\\$\\{([A-Za-z_][A-Za-z0-9_]*)\\}");

  /** Validates and copies. */
  public ConfiguredNodes {
    uris = List.copyOf(uris);
    Objects.requireNonNull(source, "source");
  }

  /**
   * These URIs with every {@code ${VAR}} reference replaced by the variable's value, so that a
   * password can stay out of the URI list: {@code redis://:${REDIS_PW}@a:6379}. The {@code redlock}
   * tool and {@link RedlockBuilder#nodesFromEnvironment()} expand the same way.
   *
   * @param environment where the values come from, usually {@link System#getenv()}
   * @throws RedlockNonTransientException naming the URI (redacted) and the variable, when a
   *     referenced variable is not set
   */
  public ConfiguredNodes expand(Map<String, String> environment) {
    List<String> expanded = new ArrayList<>(uris.size());
    for (String template : uris) {
      java.util.regex.Matcher m = VARIABLE.matcher(template);
      StringBuilder sb = new StringBuilder();
      while (m.find()) {
        String value = environment.get(m.group(1));
        if (value == null) {
          throw new RedlockNonTransientException(
              null,
              "node URI '"
                  + io.redlock.spi.NodeUri.redact(template)
                  + "' (from the "
                  + source
                  + ") refers to ${"
                  + m.group(1)
                  + "}, but the environment variable "
                  + m.group(1)
                  + " is not set; set it, or write the value into the URI",
              null);
        }
        m.appendReplacement(sb, java.util.regex.Matcher.quoteReplacement(value));
      }
      m.appendTail(sb);
      expanded.add(sb.toString());
    }
    return new ConfiguredNodes(expanded, source);
  }

  /** The names of the variables {@code uri} refers to as {@code ${VAR}}, in order. */
  public static List<String> variables(String uri) {
    return VARIABLE.matcher(uri).results().map(r -> r.group(1)).toList();
  }

  /** The count and source; the URIs may hold passwords and are left out. */
  @Override
  public String toString() {
    return uris.size() + " node URIs from " + source;
  }

  /**
   * Splits a list of node URIs as written in {@link #NODES_ENV}, a property or a command line:
   * separated by whitespace or commas. A comma followed by something that does not start a URI
   * ({@code scheme://} or {@code jdbc:}) stays inside the current URI, so MongoDB seed lists such
   * as {@code mongodb://h1:27017,h2:27017/db} survive.
   */
  public static List<String> split(String list) {
    Objects.requireNonNull(list, "list");
    List<String> out = new ArrayList<>();
    for (String word : list.strip().split("\\s+")) {
      if (word.isEmpty()) {
        continue;
      }
      StringBuilder current = new StringBuilder();
      for (String part : word.split(",", -1)) {
        if (current.length() > 0 && (part.isEmpty() || URI_START.matcher(part).matches())) {
          out.add(current.toString());
          current.setLength(0);
          if (part.isEmpty()) {
            continue;
          }
        } else if (current.length() > 0) {
          current.append(',');
        }
        current.append(part);
      }
      if (current.length() > 0) {
        out.add(current.toString());
      }
    }
    return List.copyOf(out);
  }

  /**
   * The node URIs configured in the process's environment, first found wins: system property
   * {@value #NODES_PROPERTY}, environment variable {@value #NODES_ENV}, then the properties file
   * named by system property {@value #CONFIG_PROPERTY} or environment variable {@value #CONFIG_ENV}
   * (key {@value #NODES_KEY}).
   *
   * @param environment the environment, usually {@link System#getenv()}
   * @param systemProperties the system properties, usually {@link System#getProperties()}
   * @return the URIs and their source, or empty if nothing is configured
   * @throws RedlockNonTransientException if one of them is set but blank, or a named file is
   *     missing, unreadable, or has no {@value #NODES_KEY} entry
   */
  public static Optional<ConfiguredNodes> find(
      Map<String, String> environment, Properties systemProperties) {
    String[][] lists = {
      {systemProperties.getProperty(NODES_PROPERTY), "system property " + NODES_PROPERTY},
      {environment.get(NODES_ENV), "environment variable " + NODES_ENV}
    };
    for (String[] list : lists) {
      if (setButBlankIsAnError(list[0], list[1]) != null) {
        return Optional.of(new ConfiguredNodes(split(list[0]), list[1]));
      }
    }
    String[][] files = {
      {systemProperties.getProperty(CONFIG_PROPERTY), "system property " + CONFIG_PROPERTY},
      {environment.get(CONFIG_ENV), "environment variable " + CONFIG_ENV}
    };
    for (String[] file : files) {
      if (setButBlankIsAnError(file[0], file[1]) != null) {
        return Optional.of(fromFile(Path.of(file[0]), file[1]));
      }
    }
    return Optional.empty();
  }

  /**
   * A set but blank variable is a mistake (an unset variable in a script expands to nothing), not a
   * request for the default: say so rather than silently choosing other nodes.
   */
  private static String setButBlankIsAnError(String value, String source) {
    if (value == null) {
      return null;
    }
    if (value.isBlank()) {
      throw new RedlockNonTransientException(
          null,
          "the "
              + source
              + " is set but empty; set it to the node URIs, e.g."
              + " redis://a:6379,redis://b:6379,redis://c:6379, or unset it",
          null);
    }
    return value;
  }

  /**
   * The node URIs in a properties file's {@value #NODES_KEY} entry (UTF-8).
   *
   * @param file the file
   * @param namedBy how the file was named, for messages, e.g. "--config"
   * @throws RedlockNonTransientException if the file is missing or unreadable or has no {@value
   *     #NODES_KEY} entry
   */
  public static ConfiguredNodes fromFile(Path file, String namedBy) {
    String nodes = readProperties(file, namedBy).getProperty(NODES_KEY);
    if (nodes == null || nodes.isBlank()) {
      throw new RedlockNonTransientException(
          null,
          "the properties file "
              + file
              + " (named by "
              + namedBy
              + ") has no '"
              + NODES_KEY
              + "' entry; add one, e.g. nodes=redis://a:6379,redis://b:6379,redis://c:6379",
          null);
    }
    return new ConfiguredNodes(split(nodes), "file " + file + " (named by " + namedBy + ")");
  }

  /**
   * Reads a properties file as UTF-8.
   *
   * @throws RedlockNonTransientException naming the file and how it was named if it is missing or
   *     unreadable
   */
  public static Properties readProperties(Path file, String namedBy) {
    if (!Files.isRegularFile(file)) {
      throw new RedlockNonTransientException(
          null,
          "the properties file "
              + file.toAbsolutePath()
              + " (named by "
              + namedBy
              + ") does not exist or is not a file",
          null);
    }
    Properties properties = new Properties();
    try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      properties.load(reader);
    } catch (IOException | IllegalArgumentException e) {
      throw new RedlockNonTransientException(
          null,
          "could not read the properties file " + file + " (named by " + namedBy + "): " + e,
          e);
    }
    return properties;
  }
}
