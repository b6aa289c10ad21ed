package io.redlock.jdbc.internal;

import io.redlock.sql.internal.SqlOptions;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

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
  public static final String PREFIX = SqlOptions.PREFIX;

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
          throw new IllegalArgumentException(
              "unknown option '"
                  + name
                  + "' in the JDBC URL; known options: "
                  + KNOWN.stream().map(k -> PREFIX + k).toList());
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
