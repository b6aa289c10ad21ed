package io.redlock.testservers;

import static io.redlock.testservers.PostgresServerSupport.accepts;
import static io.redlock.testservers.PostgresServerSupport.requireBinary;
import static io.redlock.testservers.PostgresServerSupport.run;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * A MariaDB server for tests, obtained in this order: the JDBC URLs in {@code REDLOCK_TEST_MARIADB}
 * (comma-separated, used as given), a Testcontainers container when Docker is available, else the
 * local binaries ({@code mariadb-install-db}, {@code mariadbd}) started on a free loopback port in
 * a folder under {@code target/servers}. If none can be had, {@link #start()} throws with a message
 * that says what to install: a test asked for MariaDB fails, never skips.
 *
 * <p>Servers started here have a database {@value #DATABASE} and a user {@value #USER} (password
 * {@value #PASSWORD}) with all rights on it; {@code root} has no password and connects from
 * 127.0.0.1 only ({@link #adminJdbcUrl()}). {@code mariadb-install-db} runs once per JVM; further
 * servers copy that data folder.
 */
public final class MariaDbServer extends LocalSqlServer {
  /** Environment variable with comma-separated JDBC URLs of servers to use instead. */
  public static final String ENV = "REDLOCK_TEST_MARIADB";

  /** The database tests use. */
  public static final String DATABASE = "redlock";

  /** The ordinary user of servers started here. */
  public static final String USER = "redlock";

  /** The password of {@link #USER} (tests only, never a real secret). */
  public static final String PASSWORD = "redlock-test-pw";

  private static final String INSTALL =
      "install MariaDB (Debian: apt-get install -y mariadb-server), set "
          + ENV
          + " to JDBC URLs of running servers, or make Docker available";
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
  private static final AtomicInteger ENV_CURSOR = new AtomicInteger();
  private static Path template;

  private final String jdbcUrl;
  private final String adminJdbcUrl;

  private MariaDbServer(
      String jdbcUrl,
      String adminJdbcUrl,
      String description,
      ManagedProcess process,
      GenericContainer<?> container,
      int port) {
    super(description, process, container, port);
    this.jdbcUrl = jdbcUrl;
    this.adminJdbcUrl = adminJdbcUrl;
  }

  /**
   * A server from the environment, a container, or local binaries, in that order.
   *
   * @throws IllegalStateException if no server can be had, saying what to install
   */
  public static MariaDbServer start() {
    List<String> urls = PostgresServerSupport.fromEnvironment(ENV);
    if (!urls.isEmpty()) {
      String url = PostgresServerSupport.next(urls, ENV_CURSOR);
      return new MariaDbServer(url, null, "external server from " + ENV, null, null, -1);
    }
    if (PostgresServerSupport.dockerAvailable()) {
      return startContainer();
    }
    return startLocal();
  }

  /**
   * A server started from the local binaries, whatever the environment says: for tests that stop,
   * crash or restart the server.
   *
   * @throws IllegalStateException if the binaries are missing or the server does not start
   */
  public static MariaDbServer startLocal() {
    Path installDb = requireBinary("mariadb-install-db", INSTALL, "/usr/bin", "/usr/local/bin");
    Path mariadbd = requireBinary("mariadbd", INSTALL, "/usr/sbin", "/usr/local/sbin");
    Path base = Binaries.scratchDir("mariadb");
    Path data = base.resolve("data");
    Path initFile = copyTemplate(installDb, base, data);
    int port = FreePorts.find();
    List<String> command =
        List.of(
            mariadbd.toString(),
            "--no-defaults",
            "--user=root",
            "--datadir=" + data,
            "--port=" + port,
            "--bind-address=127.0.0.1",
            // a short path: a Unix socket's is limited to 107 bytes (a long checkout passes that)
            "--socket=" + Binaries.socketDir("rl-mdb-").resolve("sock"),
            "--pid-file=" + base.resolve("mariadbd.pid"),
            "--skip-log-bin",
            "--skip-name-resolve",
            "--init-file=" + initFile,
            "--innodb-buffer-pool-size=32M",
            "--innodb-log-file-size=8M",
            "--innodb-flush-log-at-trx-commit=0",
            "--innodb-doublewrite=0",
            "--max-connections=300");
    ManagedProcess process =
        ManagedProcess.start(
            "mariadbd", command, Map.of(), base, () -> accepts(port), START_TIMEOUT);
    String url =
        "jdbc:mariadb://127.0.0.1:"
            + port
            + "/"
            + DATABASE
            + "?user="
            + USER
            + "&password="
            + PASSWORD;
    String admin = "jdbc:mariadb://127.0.0.1:" + port + "/" + DATABASE + "?user=root";
    return new MariaDbServer(url, admin, "local mariadbd on port " + port, process, null, port);
  }

  private static MariaDbServer startContainer() {
    GenericContainer<?> c =
        new GenericContainer<>(DockerImageName.parse("mariadb:10.11"))
            .withEnv("MARIADB_ROOT_PASSWORD", PASSWORD)
            .withEnv("MARIADB_DATABASE", DATABASE)
            .withEnv("MARIADB_USER", USER)
            .withEnv("MARIADB_PASSWORD", PASSWORD)
            .withExposedPorts(3306)
            .waitingFor(
                Wait.forLogMessage(".*ready for connections.*\\s", 2)
                    .withStartupTimeout(Duration.ofMinutes(2)));
    c.start();
    String hostPort = c.getHost() + ":" + c.getMappedPort(3306);
    String url =
        "jdbc:mariadb://" + hostPort + "/" + DATABASE + "?user=" + USER + "&password=" + PASSWORD;
    String admin =
        "jdbc:mariadb://" + hostPort + "/" + DATABASE + "?user=root&password=" + PASSWORD;
    return new MariaDbServer(url, admin, "container " + c.getContainerName(), null, c, -1);
  }

  /** Installs the system tables once per JVM, then copies them; returns the init SQL file. */
  private static synchronized Path copyTemplate(Path installDb, Path base, Path data) {
    if (template == null || !Files.isDirectory(template)) {
      Path dir = Binaries.scratchDirUntilExit("mariadb-template");
      Path tdata = dir.resolve("data");
      run(
          dir,
          120,
          installDb.toString(),
          "--no-defaults",
          "--datadir=" + tdata,
          "--user=root",
          "--auth-root-authentication-method=normal",
          "--skip-test-db",
          "--skip-name-resolve",
          // small InnoDB files: copied for every server
          "--innodb-log-file-size=8M",
          "--innodb-buffer-pool-size=32M");
      template = tdata;
    }
    run(base, 60, "cp", "-a", template.toString(), data.toString());
    Path initFile = base.resolve("init.sql");
    try {
      Files.writeString(
          initFile,
          "CREATE DATABASE IF NOT EXISTS "
              + DATABASE
              + ";\n"
              + "CREATE USER IF NOT EXISTS '"
              + USER
              + "'@'%' IDENTIFIED BY '"
              + PASSWORD
              + "';\n"
              + "GRANT ALL ON "
              + DATABASE
              + ".* TO '"
              + USER
              + "'@'%';\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return initFile;
  }

  /** The JDBC URL for {@link #USER}, with user and password in its query. */
  public String jdbcUrl() {
    return jdbcUrl;
  }

  /** A JDBC URL for {@code root} (to change server settings), when this test knows one. */
  public String adminJdbcUrl() {
    if (adminJdbcUrl == null) {
      throw new IllegalStateException(
          description + " was given by URL only: no administrator login is known");
    }
    return adminJdbcUrl;
  }

  /** Stops a local server cleanly (SIGTERM). */
  @Override
  public void stop() {
    stopWith("stop", "TERM");
  }

  /** Starts a stopped local server again on the same port and data folder. */
  public void restart() {
    requireLocal("restart");
    process.restart(() -> accepts(port), START_TIMEOUT);
  }
}
