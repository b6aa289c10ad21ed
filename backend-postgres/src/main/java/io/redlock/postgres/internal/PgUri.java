package io.redlock.postgres.internal;

import io.redlock.spi.NodeUri;
import io.vertx.core.net.ClientSSLOptions;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.core.net.PemTrustOptions;
import io.vertx.core.net.TrustOptions;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.SslMode;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;
import javax.net.ssl.TrustManagerFactory;

/**
 * A {@code postgresql://} URI in libpq's form, split into the connection settings (read by Vert.x's
 * {@link PgConnectOptions#fromUri}, plus the TLS files read here) and this library's {@code
 * redlock.*} options. Any other parameter is an error naming it (Vert.x would ignore it). Where
 * libpq and Vert.x differ, libpq wins: the user defaults to the OS user and the database to the
 * user, {@code sslmode} to {@code prefer}, and {@code prefer} / {@code require} encrypt without
 * checking the certificate (with {@code sslrootcert}, {@code require} checks it).
 *
 * @param options the connection settings
 * @param redlock the {@code redlock.*} options, by name without the prefix, decoded
 * @param connectTimeout libpq's {@code connect_timeout}, or null
 * @param name the node's name: {@code postgresql://user@host:port/database}, no secrets
 */
public record PgUri(
    PgConnectOptions options, Map<String, String> redlock, Duration connectTimeout, String name) {

  private static final String PREFIX = "redlock.";
  private static final List<String> OPTIONS =
      Stream.of(
              "table",
              "createTable",
              "poolSize",
              "connectionTimeout",
              "queryTimeout",
              "pipeliningLimit",
              "releaseNotifications")
          .map(o -> PREFIX + o)
          .toList();

  /** The libpq parameters Vert.x reads. */
  private static final List<String> DRIVER_PARAMETERS =
      List.of(
          "host",
          "hostaddr",
          "port",
          "user",
          "password",
          "dbname",
          "sslmode",
          "application_name",
          "fallback_application_name",
          "search_path",
          "options");

  /** The libpq parameters read here. */
  private static final List<String> OWN_PARAMETERS =
      List.of("sslrootcert", "sslcert", "sslkey", "connect_timeout");

  /** Everything a URI may carry, as the error for anything else lists it. */
  private static final List<String> KNOWN =
      Stream.of(DRIVER_PARAMETERS, OWN_PARAMETERS, OPTIONS).flatMap(List::stream).toList();

  /**
   * Parses {@code uri}.
   *
   * @throws IllegalArgumentException for another scheme, a malformed URI, an unknown parameter or
   *     option, or a TLS file that does not exist; the message never shows the password
   */
  public static PgUri parse(String uri) {
    Objects.requireNonNull(uri, "uri");
    String text = uri.strip();
    String lower = text.toLowerCase(Locale.ROOT);
    String shown = NodeUri.redactUri(text);
    if (!lower.startsWith("postgresql://") && !lower.startsWith("postgres://")) {
      throw new IllegalArgumentException(
          "not a PostgreSQL URI: '"
              + shown
              + "'; expected postgresql://user:password@host:5432/database?sslmode=..."
              + " (libpq's form)");
    }
    NodeUri.parse(text); // a bad port, named with the URI

    int q = text.indexOf('?');
    String base = q < 0 ? text : text.substring(0, q);
    String authority = base.substring(base.indexOf("://") + 3);
    int slash = authority.indexOf('/');
    String path = slash < 0 ? "" : authority.substring(slash + 1);
    authority = slash < 0 ? authority : authority.substring(0, slash);
    if (authority.substring(authority.lastIndexOf('@') + 1).contains(",")) {
      throw new IllegalArgumentException(
          "URI '" + shown + "' names several hosts; a lock node is one server: give one host");
    }
    Map<String, String> redlock = new LinkedHashMap<>();
    Map<String, String> own = new LinkedHashMap<>();
    Map<String, String> driver = new LinkedHashMap<>();
    StringBuilder kept = new StringBuilder();
    if (q >= 0) {
      for (String pair : text.substring(q + 1).split("&")) {
        if (pair.isEmpty()) {
          continue;
        }
        int eq = pair.indexOf('=');
        String key = decode(eq < 0 ? pair : pair.substring(0, eq));
        String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
        String lowerKey = key.toLowerCase(Locale.ROOT);
        if (OPTIONS.contains(key)) {
          redlock.put(key.substring(PREFIX.length()), value);
        } else if (OWN_PARAMETERS.contains(lowerKey)) {
          own.put(lowerKey, value);
        } else if (DRIVER_PARAMETERS.contains(lowerKey)) {
          driver.put(lowerKey, value);
          kept.append(kept.length() == 0 ? "?" : "&").append(pair);
        } else {
          throw NodeUri.unknownOption(key, text, KNOWN);
        }
      }
    }
    PgConnectOptions options;
    try {
      options = PgConnectOptions.fromUri(base + kept);
    } catch (RuntimeException e) {
      // Vert.x's message repeats the URI, password and all: keep only the reason
      Throwable reason = e.getCause() != null ? e.getCause() : e;
      throw new IllegalArgumentException(
          "invalid PostgreSQL URI '"
              + shown
              + "': "
              + (userInfoOf(text).isEmpty()
                  ? NodeUri.redact(String.valueOf(reason.getMessage()))
                  : "Vert.x cannot read it") // its message may quote a piece of the password
              + " (characters outside letters, digits and -._~ in the user, password or"
              + " database must be percent-encoded)");
    }
    String userInfo =
        authority.contains("@") ? authority.substring(0, authority.lastIndexOf('@')) : "";
    boolean hasUser = !userInfo.isEmpty() || driver.containsKey("user");
    boolean hasPassword = userInfo.contains(":") || driver.containsKey("password");
    boolean hasDatabase = !path.isEmpty() || driver.containsKey("dbname");
    if (!hasUser) {
      options.setUser(System.getProperty("user.name", "postgres"));
    }
    if (!hasPassword) {
      options.setPassword(""); // not Vert.x's default "pass"; trust and peer need none
    }
    if (!hasDatabase) {
      options.setDatabase(options.getUser());
    }
    // a URI that sets one property replaces Vert.x's defaults (client_encoding...): put them back
    PgConnectOptions.DEFAULT_PROPERTIES.forEach(
        (k, v) -> {
          if (!options.getProperties().containsKey(k)) {
            options.addProperty(k, v);
          }
        });
    if (!driver.containsKey("application_name")) {
      options.addProperty("application_name", "redlock");
    }
    SslMode mode = driver.containsKey("sslmode") ? options.getSslMode() : SslMode.PREFER;
    options.setSslMode(mode);
    options.setSslOptions(ssl(mode, own, shown));
    Duration connectTimeout = null;
    if (own.containsKey("connect_timeout")) {
      try {
        long seconds = Long.parseLong(own.get("connect_timeout").strip());
        connectTimeout = seconds <= 0 ? null : Duration.ofSeconds(Math.max(1, seconds));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "connect_timeout must be a whole number of seconds, got '"
                + own.get("connect_timeout")
                + "'");
      }
    }
    return new PgUri(options, Map.copyOf(redlock), connectTimeout, name(options));
  }

  /** The text between "://" and the last '@' before the query, or "". */
  private static String userInfoOf(String text) {
    int start = text.indexOf("://") + 3;
    int q = text.indexOf('?', start);
    int at = text.lastIndexOf('@', q < 0 ? text.length() : q);
    return at < start ? "" : text.substring(start, at);
  }

  /** {@code postgresql://user@host:port/database}: enough to tell nodes apart, no secrets. */
  public static String name(PgConnectOptions options) {
    String host = options.getHost();
    if (host != null && host.contains(":") && !host.startsWith("[")) {
      host = "[" + host + "]";
    }
    return NodeUri.redact(
        "postgresql://"
            + (options.getUser() == null || options.getUser().isEmpty()
                ? ""
                : options.getUser() + "@")
            + host
            + ":"
            + options.getPort()
            + "/"
            + options.getDatabase());
  }

  private static ClientSSLOptions ssl(SslMode mode, Map<String, String> own, String shown) {
    ClientSSLOptions ssl = new ClientSSLOptions().setHostnameVerificationAlgorithm("");
    String root = own.get("sslrootcert");
    String cert = own.get("sslcert");
    String key = own.get("sslkey");
    if ((cert == null) != (key == null)) {
      throw new IllegalArgumentException(
          "sslcert and sslkey go together (a client certificate and its key, PEM files); the URI '"
              + shown
              + "' gives only "
              + (cert == null ? "sslkey" : "sslcert"));
    }
    if (cert != null) {
      ssl.setKeyCertOptions(
          new PemKeyCertOptions()
              .setCertPath(requireFile("sslcert", cert))
              .setKeyPath(requireFile("sslkey", key)));
    }
    if (root != null && !root.equals("system")) {
      root = requireFile("sslrootcert", root); // given but unused (sslmode=prefer) is still checked
    }
    boolean verify =
        mode == SslMode.VERIFY_CA
            || mode == SslMode.VERIFY_FULL
            || (mode == SslMode.REQUIRE && root != null);
    if (!verify) {
      return ssl.setTrustAll(true); // libpq: encryption without a check of the certificate
    }
    if (root != null && !root.equals("system")) {
      ssl.setTrustOptions(new PemTrustOptions().addCertPath(root));
    } else {
      ssl.setTrustOptions(systemTrust()); // sslrootcert=system, or none: the JVM's CAs
    }
    if (mode == SslMode.VERIFY_FULL) {
      ssl.setHostnameVerificationAlgorithm("HTTPS");
    }
    return ssl;
  }

  private static TrustOptions systemTrust() {
    try {
      TrustManagerFactory factory =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      factory.init((KeyStore) null);
      return TrustOptions.wrap(factory);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JVM's default trust store cannot be read: " + e, e);
    }
  }

  private static String requireFile(String parameter, String file) {
    Path path = Path.of(file);
    if (!Files.isReadable(path)) {
      throw new IllegalArgumentException(
          parameter + "=" + file + ": no such readable file (a PEM file is expected)");
    }
    return path.toAbsolutePath().toString();
  }

  private static String decode(String s) {
    return URLDecoder.decode(s, StandardCharsets.UTF_8);
  }
}
