package io.redlock.jdbc.internal;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * Where and how the wire-protocol transport ({@link PgWireTransport}) connects: read from the same
 * {@code jdbc:postgresql:} URL as the node's JDBC pool, with pgjdbc's own URL parser, so that both
 * reach the same server, database, user and schema. Driver options that the transport cannot honour
 * in the same way are refused when the node is built, naming the option, rather than ignored: a
 * connection that silently differed from the JDBC one (another schema, no TLS) could lock in
 * another table.
 *
 * @param host the server's host name or address (without IPv6 brackets)
 * @param port its port
 * @param database the database
 * @param user the user
 * @param password the password, or null (then the {@code .pgpass} file is asked, as pgjdbc does)
 * @param sslMode libpq's and pgjdbc's {@code sslmode}
 * @param sslRootCert the PEM file of the certificates trusted for {@code verify-ca} and {@code
 *     verify-full}
 * @param searchPath the {@code currentSchema} option: the session's {@code search_path}, or null
 * @param options the {@code options} option: passed to the server as is (e.g. {@code -c
 *     search_path=locks}), or null
 * @param applicationName the session's {@code application_name}
 * @param connectTimeout the limit on opening a connection, TLS and authentication included
 * @param statementTimeout the server-side {@code statement_timeout} of every lock statement
 * @param socketTimeout how long a late answer is waited for before its connection is closed
 * @param tcpKeepAlive whether TCP keepalive is on
 * @param namedStatements false when the URL asks for no server-side prepared statements ({@code
 *     prepareThreshold=0} or {@code preferQueryMode=simple}, as behind a transaction-pooling
 *     proxy): every call then parses its statement anew as the unnamed statement
 */
public record PgWireSettings(
    String host,
    int port,
    String database,
    String user,
    String password,
    SslMode sslMode,
    Path sslRootCert,
    String searchPath,
    String options,
    String applicationName,
    Duration connectTimeout,
    Duration statementTimeout,
    Duration socketTimeout,
    boolean tcpKeepAlive,
    boolean namedStatements) {

  /** The {@code sslmode}s of libpq, with pgjdbc's meanings. */
  public enum SslMode {
    /** No TLS. */
    DISABLE,
    /** TLS if the server insists: tried without it first (pgjdbc's behaviour). */
    ALLOW,
    /** TLS if the server offers it, without checking its certificate (pgjdbc's default). */
    PREFER,
    /** TLS or nothing, without checking the server's certificate. */
    REQUIRE,
    /** TLS, with a certificate signed by a trusted authority. */
    VERIFY_CA,
    /** TLS, with a trusted certificate issued to the host name in the URL. */
    VERIFY_FULL;

    static SslMode parse(String value) {
      try {
        return valueOf(value.strip().toUpperCase(Locale.ROOT).replace('-', '_'));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full, got '"
                + value
                + "'");
      }
    }

    /** Whether the server's certificate chain is checked. */
    boolean verifiesCertificate() {
      return this == VERIFY_CA || this == VERIFY_FULL;
    }
  }

  /** pgjdbc options the transport honours in the same way as pgjdbc. */
  private static final Set<String> HONOURED =
      Set.of(
          "PGHOST",
          "PGPORT",
          "PGDBNAME",
          "user",
          "password",
          "ssl",
          "sslmode",
          "sslrootcert",
          "currentSchema",
          "options",
          "ApplicationName",
          "connectTimeout",
          "socketTimeout",
          "tcpKeepAlive",
          "loginTimeout",
          "prepareThreshold",
          "preferQueryMode",
          "channelBinding");

  /**
   * pgjdbc options that change nothing the lock statements depend on (statement caching, batching,
   * fetching, logging); they apply to the node's JDBC connections only.
   */
  private static final Set<String> IRRELEVANT =
      Set.of(
          "preparedStatementCacheQueries",
          "preparedStatementCacheSizeMiB",
          "defaultRowFetchSize",
          "reWriteBatchedInserts",
          "binaryTransfer",
          "binaryTransferEnable",
          "binaryTransferDisable",
          "logUnclosedConnections",
          "logServerErrorDetail",
          "cancelSignalTimeout",
          "assumeMinServerVersion",
          "readOnly",
          "readOnlyMode",
          "autosave",
          "cleanupSavepoints",
          "stringtype",
          "disableColumnSanitiser",
          "receiveBufferSize",
          "sendBufferSize",
          "maxResultBuffer",
          "adaptiveFetch",
          "adaptiveFetchMaximum",
          "adaptiveFetchMinimum",
          "hideUnprivilegedObjects",
          "quoteReturningIdentifiers",
          "escapeSyntaxCallMode",
          "databaseMetadataCacheFields",
          "databaseMetadataCacheFieldsMiB",
          "unknownLength",
          "groupStartupParameters");

  /** Hides the password. */
  @Override
  public String toString() {
    return "PgWireSettings["
        + host
        + ":"
        + port
        + "/"
        + database
        + ", user="
        + user
        + ", sslmode="
        + sslMode.name().toLowerCase(Locale.ROOT).replace('_', '-')
        + "]";
  }

  /**
   * The defaults pgjdbc's {@code Driver.connect} starts from: every {@code
   * org/postgresql/driverconfig.properties} that {@code loader} (the driver's) finds, the first
   * found winning, as pgjdbc merges them.
   */
  static Properties driverDefaults(ClassLoader loader) {
    Properties defaults = new Properties();
    try {
      List<java.net.URL> files =
          java.util.Collections.list(loader.getResources("org/postgresql/driverconfig.properties"));
      for (int i = files.size() - 1; i >= 0; i--) {
        try (java.io.InputStream in = files.get(i).openStream()) {
          defaults.load(in);
        }
      }
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException(
          "cannot read pgjdbc's driverconfig.properties on the class path: " + e.getMessage(), e);
    }
    return defaults;
  }

  /**
   * Reads the settings of a {@code jdbc:postgresql:} URL (without this library's {@code redlock.*}
   * options).
   *
   * @param queryTimeout the node's statement timeout: the server's {@code statement_timeout}, and
   *     with 5 s more the wait for a late answer (as the JDBC pool's {@code socketTimeout})
   * @throws IllegalArgumentException for a URL pgjdbc does not accept, several hosts, or a driver
   *     option the transport cannot honour; the message names it and the way out
   */
  public static PgWireSettings parse(
      String driverUrl, Duration connectionTimeout, Duration queryTimeout) {
    // the defaults pgjdbc's Driver.connect starts from, so that both see the same options
    ClassLoader loader = org.postgresql.Driver.class.getClassLoader();
    return parse(
        driverUrl,
        connectionTimeout,
        queryTimeout,
        driverDefaults(loader != null ? loader : ClassLoader.getSystemClassLoader()));
  }

  /** {@link #parse(String, Duration, Duration)} over the given driver defaults. */
  static PgWireSettings parse(
      String driverUrl, Duration connectionTimeout, Duration queryTimeout, Properties defaults) {
    Properties p;
    try {
      // chained as Driver.connect chains them: below the URL and a service file's settings
      p = org.postgresql.Driver.parseURL(driverUrl, new Properties(defaults));
    } catch (RuntimeException e) {
      p = null;
    }
    if (p == null) {
      throw new IllegalArgumentException(
          "not a PostgreSQL JDBC URL that pgjdbc accepts, e.g."
              + " jdbc:postgresql://host:5432/db?user=app&password=...");
    }
    Set<String> refused = new TreeSet<>();
    int unknown = 0;
    for (String name : p.stringPropertyNames()) {
      if (!HONOURED.contains(name) && !IRRELEVANT.contains(name)) {
        // a name pgjdbc does not know is not shown: it may be the tail of a password with an
        // unencoded '&'
        if (org.postgresql.PGProperty.forName(name) != null) {
          refused.add(name);
        } else {
          unknown++;
        }
      }
    }
    if (!refused.isEmpty() || unknown > 0) {
      throw new IllegalArgumentException(
          "redlock.wireProtocol cannot honour the driver option(s) "
              + (refused.isEmpty() ? "" : refused + " ")
              + (unknown == 0
                  ? ""
                  : (refused.isEmpty() ? "" : "and ")
                      + unknown
                      + " option(s) pgjdbc does not know (not named here: percent-encode an '&'"
                      + " in a password) ")
              + "the way pgjdbc does (its own connections would then differ from the JDBC"
              + " ones); remove them, or set redlock.wireProtocol=auto (the default) or false to"
              + " run the lock calls over JDBC. It honours "
              + new TreeSet<>(HONOURED.stream().filter(n -> !n.startsWith("PG")).toList()));
    }
    String host = p.getProperty("PGHOST", "localhost");
    String port = p.getProperty("PGPORT", "5432");
    if (host.contains(",") || port.contains(",")) {
      throw new IllegalArgumentException(
          "redlock.wireProtocol connects to one server, but the URL lists several hosts; a lock"
              + " node must be one server anyway: give one host per node");
    }
    if (host.contains("@")) {
      // not named: what precedes the '@' may be a password
      throw new IllegalArgumentException(
          "the URL's host has user information before an '@' (user:password@host), which pgjdbc"
              + " does not read: give user and password as options (?user=...&password=...)");
    }
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int portNumber;
    try {
      portNumber = Integer.parseInt(port);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("the port in the URL is not a number: '" + port + "'");
    }
    String database = p.getProperty("PGDBNAME", "");
    String user = p.getProperty("user", System.getProperty("user.name", ""));
    if (database.isEmpty()) {
      database = user; // as libpq and pgjdbc do
    }
    String password = p.getProperty("password");
    if (password == null) {
      try {
        password =
            org.postgresql.jdbcurlresolver.PgPassParser.getPassword(
                host, Integer.toString(portNumber), database, user);
      } catch (LinkageError olderPgjdbc) {
        // pgjdbc before 42.3 reads no .pgpass file either
      }
    }
    SslMode mode;
    String sslmode = p.getProperty("sslmode");
    if (sslmode != null) {
      mode = SslMode.parse(sslmode);
    } else {
      String ssl = p.getProperty("ssl");
      // pgjdbc: ssl=true without an sslmode means verify-full
      mode = ssl != null && !ssl.equalsIgnoreCase("false") ? SslMode.VERIFY_FULL : SslMode.PREFER;
    }
    Path rootCert =
        p.getProperty("sslrootcert") != null
            ? Path.of(p.getProperty("sslrootcert"))
            : defaultRootCert();
    Duration connect = connectionTimeout;
    for (String option : List.of("connectTimeout", "loginTimeout")) {
      if (p.getProperty(option) != null) {
        connect = seconds(option, p.getProperty(option), connect);
      }
    }
    Duration socket = queryTimeout.plusSeconds(5);
    if (p.getProperty("socketTimeout") != null) {
      socket = seconds("socketTimeout", p.getProperty("socketTimeout"), socket);
    }
    String keepAlive = p.getProperty("tcpKeepAlive", "false");
    String binding = p.getProperty("channelBinding", "prefer").strip();
    if (binding.equalsIgnoreCase("require")) {
      throw new IllegalArgumentException(
          "redlock.wireProtocol does not do SCRAM channel binding, which channelBinding=require"
              + " demands: set redlock.wireProtocol=auto (the default) or false for this node to"
              + " run the lock calls over JDBC, or use"
              + " channelBinding=prefer (with sslmode=verify-full the certificate check already"
              + " stops a man in the middle)");
    }
    boolean named = true;
    String threshold = p.getProperty("prepareThreshold");
    if (threshold != null) {
      try {
        named = Integer.parseInt(threshold.strip()) != 0; // pgjdbc: negative prepares at once
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "the driver option prepareThreshold must be a whole number, got '" + threshold + "'");
      }
    }
    if ("simple".equalsIgnoreCase(p.getProperty("preferQueryMode", "").strip())) {
      named = false;
    }
    return new PgWireSettings(
        host,
        portNumber,
        database,
        user,
        password,
        mode,
        rootCert,
        p.getProperty("currentSchema"),
        p.getProperty("options"),
        p.getProperty("ApplicationName", "redlock"),
        connect,
        queryTimeout,
        socket,
        Boolean.parseBoolean(keepAlive),
        named);
  }

  /** pgjdbc's default: {@code ~/.postgresql/root.crt}, on Windows {@code %APPDATA%\\postgresql}. */
  private static Path defaultRootCert() {
    String appData = System.getenv("APPDATA");
    if (System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("windows")
        && appData != null) {
      return Path.of(appData, "postgresql", "root.crt");
    }
    return Path.of(System.getProperty("user.home", ""), ".postgresql", "root.crt");
  }

  /** A pgjdbc timeout option in seconds; 0 means none there, so the node's own is kept. */
  private static Duration seconds(String option, String value, Duration otherwise) {
    try {
      long n = Long.parseLong(value.strip());
      if (n < 0) {
        throw new NumberFormatException();
      }
      return n == 0 ? otherwise : Duration.ofSeconds(n);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "the driver option " + option + " must be whole seconds, got '" + value + "'");
    }
  }
}
