package io.redlock.jdbc.internal;

import io.redlock.RedlockNonTransientException;
import io.redlock.spi.NodeUri;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * The {@code redlock.*} options of a JDBC URL, split from the options meant for the driver. They
 * live in the URL's query ({@code ?redlock.table=locks&redlock.poolSize=8}) and are removed before
 * the URL reaches the driver, so they never clash with driver options.
 *
 * @param driverUrl the URL without the {@code redlock.*} options
 * @param options the {@code redlock.*} options, by name without the prefix, decoded
 */
public record JdbcOptions(String driverUrl, Map<String, String> options) {
  /** The prefix that marks this library's options. */
  public static final String PREFIX = "redlock.";

  /** The options understood, without the prefix. */
  public static final List<String> KNOWN =
      List.of(
          "table",
          "createTable",
          "poolSize",
          "connectionTimeout",
          "queryTimeout",
          "releaseNotifications");

  /**
   * Splits {@code url}.
   *
   * @throws IllegalArgumentException for an unknown {@code redlock.*} option, listing the known, or
   *     a bad port
   */
  public static JdbcOptions parse(String url) {
    io.redlock.spi.NodeUri.parse(url); // a bad port, named with the URL (redacted)
    int q = url.indexOf('?');
    if (q < 0) {
      return new JdbcOptions(url, Map.of());
    }
    StringBuilder kept = new StringBuilder();
    Map<String, String> options = new LinkedHashMap<>();
    for (String pair : url.substring(q + 1).split("&")) {
      int eq = pair.indexOf('=');
      String name = eq < 0 ? pair : pair.substring(0, eq);
      if (name.startsWith(PREFIX)) {
        String option = name.substring(PREFIX.length());
        if (option.equals("wireProtocol")) {
          throw new IllegalArgumentException(
              "the option '"
                  + name
                  + "' is gone: for PostgreSQL without a thread per call, use the module"
                  + " io.redlock:redlock-backend-postgres with a postgresql:// URI; remove the option"
                  + " to stay on JDBC");
        }
        if (!KNOWN.contains(option)) {
          throw NodeUri.unknownOption(name, url, KNOWN.stream().map(k -> PREFIX + k).toList());
        }
        String value = eq < 0 ? "" : pair.substring(eq + 1);
        options.put(
            option, java.net.URLDecoder.decode(value, java.nio.charset.StandardCharsets.UTF_8));
      } else if (!pair.isEmpty()) {
        kept.append(kept.length() == 0 ? "" : "&").append(pair);
      }
    }
    String base = url.substring(0, q);
    return new JdbcOptions(kept.length() == 0 ? base : base + "?" + kept, Map.copyOf(options));
  }

  /** The sub-protocol of a JDBC URL, lower case: {@code postgresql}, {@code h2}... */
  public static String subprotocol(String url) {
    String lower = url.toLowerCase(Locale.ROOT);
    if (!lower.startsWith("jdbc:")) {
      throw new IllegalArgumentException(
          "not a JDBC URL (it must start with jdbc:), e.g. jdbc:postgresql://host:5432/db");
    }
    int end = lower.indexOf(':', 5);
    return end < 0 ? lower.substring(5) : lower.substring(5, end);
  }

  /** True if the driver part of the URL sets {@code name} (case-insensitive). */
  public boolean driverSets(String name) {
    int q = driverUrl.indexOf('?');
    String query = q < 0 ? "" : driverUrl.substring(q + 1);
    String lower = "&" + query.toLowerCase(Locale.ROOT);
    return lower.contains("&" + name.toLowerCase(Locale.ROOT) + "=");
  }

  /**
   * A connection of its own for LISTEN: the URL's settings, the given connect timeout, and TCP
   * keepalive so that a dead path is noticed even while no notification comes.
   */
  public Connection openListener(Duration connectionTimeout) throws SQLException {
    Properties properties = new Properties();
    if (!driverSets("connectTimeout")) {
      properties.setProperty(
          "connectTimeout",
          Long.toString(Math.max(1, (connectionTimeout.toMillis() + 999) / 1000)));
    }
    if (!driverSets("tcpKeepAlive")) {
      properties.setProperty("tcpKeepAlive", "true");
    }
    if (!driverSets("ApplicationName")) {
      properties.setProperty("ApplicationName", "redlock-release-listener");
    }
    return DriverManager.getConnection(driverUrl, properties);
  }

  /** The driver's settings for the built-in pool, where the URL does not set them. */
  public Properties driverProperties(Duration queryTimeout, Duration connectionTimeout) {
    Properties driverProperties = new Properties();
    long socketSeconds = (queryTimeout.toMillis() + 999) / 1000 + 5;
    long connectSeconds = Math.max(1, (connectionTimeout.toMillis() + 999) / 1000);
    switch (subprotocol(driverUrl)) {
      case "postgresql" -> {
        // a frozen server never answers the cancel that a statement timeout sends
        setDefault(driverProperties, "socketTimeout", Long.toString(socketSeconds));
        setDefault(driverProperties, "connectTimeout", Long.toString(connectSeconds));
      }
      case "mariadb", "mysql" -> {
        // required: without it an unchanged row counts as "found" and "held" looks acquired
        driverProperties.setProperty("useAffectedRows", "true");
        setDefault(driverProperties, "socketTimeout", Long.toString(socketSeconds * 1000));
        setDefault(driverProperties, "connectTimeout", Long.toString(connectionTimeout.toMillis()));
      }
      case "sqlite" -> {
        // WAL lets readers and one writer work at once, across processes too; writers wait
        // for each other up to the busy timeout instead of failing at once
        setDefault(driverProperties, "journal_mode", "WAL");
        setDefault(driverProperties, "busy_timeout", Long.toString(queryTimeout.toMillis()));
      }
      default -> {
        // H2 and others: driver defaults
      }
    }
    return driverProperties;
  }

  /**
   * The node's name by default, the URL for messages: without the {@code redlock.*} options and
   * without secret query parameters at all (a redacted {@code password=***} at the end of a name
   * would run into the message that follows it), and with any password in the authority redacted.
   */
  public String displayName() {
    int q = driverUrl.indexOf('?');
    String base = q < 0 ? driverUrl : driverUrl.substring(0, q);
    // H2-style settings: jdbc:h2:tcp://host/db;USER=sa;PASSWORD=secret
    StringBuilder head = new StringBuilder();
    for (String segment : base.split(";")) {
      String probe = ";" + segment;
      if (head.length() == 0 || NodeUri.redact(probe).equals(probe)) {
        head.append(head.length() == 0 ? "" : ";").append(segment);
      }
    }
    if (q < 0) {
      return NodeUri.redact(head.toString());
    }
    StringBuilder kept = new StringBuilder();
    for (String pair : driverUrl.substring(q + 1).split("&")) {
      String probe = "?" + pair;
      if (!pair.isEmpty() && NodeUri.redact(probe).equals(probe)) {
        kept.append(kept.length() == 0 ? "?" : "&").append(pair);
      }
    }
    return NodeUri.redact(head.toString()) + kept;
  }

  private void setDefault(Properties driverProperties, String property, String value) {
    if (!driverSets(property)) {
      driverProperties.setProperty(property, value);
    }
  }

  public void requireDriver(String node) {
    String subprotocol = subprotocol(driverUrl);
    try {
      DriverManager.getDriver(driverUrl);
    } catch (SQLException e) {
      String artifact =
          switch (subprotocol(driverUrl)) {
            case "postgresql" -> "org.postgresql:postgresql";
            case "mariadb" -> "org.mariadb.jdbc:mariadb-java-client";
            case "mysql" ->
                "com.mysql:mysql-connector-j (or org.mariadb.jdbc:mariadb-java-client with"
                    + " permitMysqlScheme)";
            case "sqlite" -> "org.xerial:sqlite-jdbc";
            case "h2" -> "com.h2database:h2";
            default -> "the JDBC driver for jdbc:" + subprotocol;
          };
      throw new RedlockNonTransientException(
          node,
          "no JDBC driver on the class path accepts jdbc:"
              + subprotocol
              + " URLs: add the dependency "
              + artifact,
          null);
    }
  }

  /** The URL with secrets redacted: the driver URL may hold a password. */
  @Override
  public String toString() {
    return "JdbcOptions["
        + io.redlock.spi.NodeUri.redact(driverUrl)
        + ", "
        + options.keySet()
        + "]";
  }
}
