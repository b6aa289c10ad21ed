package io.redlock.testservers;

import static io.redlock.testservers.PostgresServerSupport.accepts;
import static io.redlock.testservers.PostgresServerSupport.requireBinary;
import static io.redlock.testservers.PostgresServerSupport.run;
import static io.redlock.testservers.PostgresServerSupport.runningAsRoot;
import static io.redlock.testservers.PostgresServerSupport.signal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * A PostgreSQL server for tests, obtained in this order: the JDBC URLs in {@code
 * REDLOCK_TEST_POSTGRES} (comma-separated, used as given), a Testcontainers container when Docker
 * is available, else the local PostgreSQL binaries ({@code initdb}, {@code postgres}) started on a
 * free loopback port in a folder under {@code target/servers}. If none can be had, {@link #start()}
 * throws with a message that says what to install: a test asked for PostgreSQL fails, never skips.
 *
 * <p>Local servers run with {@code fsync=off}, password authentication over TCP (user {@value
 * #USER}, password {@value #PASSWORD}) and can be stopped, crashed and restarted on the same port
 * for fault injection. {@code initdb} runs once per JVM; further servers copy that data folder.
 */
public final class PostgresServer extends LocalSqlServer {
  /** Environment variable with comma-separated JDBC URLs of servers to use instead. */
  public static final String ENV = "REDLOCK_TEST_POSTGRES";

  /** The superuser of servers started here. */
  public static final String USER = "postgres";

  /** The password of {@link #USER} on servers started here (tests only, never a real secret). */
  public static final String PASSWORD = "redlock-test-pw";

  private static final String INSTALL =
      "install PostgreSQL (Debian: apt-get install -y postgresql), set "
          + ENV
          + " to JDBC URLs of running servers, or make Docker available";
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
  private static final AtomicInteger ENV_CURSOR = new AtomicInteger();
  private static Path template;

  private final String jdbcUrl;
  private final Path dataDir;

  private PostgresServer(
      String jdbcUrl,
      String description,
      ManagedProcess process,
      GenericContainer<?> container,
      Path dataDir,
      int port) {
    super(description, process, container, port);
    this.jdbcUrl = jdbcUrl;
    this.dataDir = dataDir;
  }

  /**
   * A server from the environment, a container, or local binaries, in that order.
   *
   * @throws IllegalStateException if no server can be had, saying what to install
   */
  public static PostgresServer start() {
    List<String> urls = PostgresServerSupport.fromEnvironment(ENV);
    if (!urls.isEmpty()) {
      String url = PostgresServerSupport.next(urls, ENV_CURSOR);
      return new PostgresServer(url, "external server from " + ENV, null, null, null, -1);
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
  public static PostgresServer startLocal() {
    Path base = Binaries.scratchDir("postgres");
    return startLocal(base, List.of());
  }

  /**
   * A local server with TLS and the password methods of {@code pg_hba.conf} over TCP: TLS on, with
   * a self-signed certificate made with {@code openssl} for 127.0.0.1 only (its file: {@link
   * #certificate()}, to trust it); user {@value #CLEARTEXT_USER} authenticates with the clear-text
   * method, every other user with the {@code md5} method (SCRAM for a user whose password is stored
   * as SCRAM, as {@link #USER}'s is; MD5 for one stored as MD5). Plain TCP is accepted too.
   *
   * @throws IllegalStateException if the binaries or openssl are missing
   */
  public static PostgresServer startLocalWithTls() {
    Path base = Binaries.scratchDir("postgres-tls");
    Path tls = base.resolve("tls");
    try {
      Files.createDirectories(tls);
      Files.writeString(
          tls.resolve("pg_hba.conf"),
          "local all all trust\n"
              + "host all "
              + CLEARTEXT_USER
              + " 127.0.0.1/32 password\n"
              + "host all all 127.0.0.1/32 md5\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    selfSignedCertificate(tls, "redlock-test", "server");
    try {
      Files.setPosixFilePermissions(
          tls.resolve("server.key"),
          java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    for (String file : List.of("", "pg_hba.conf", "server.key", "server.crt")) {
      handToServerUser(file.isEmpty() ? tls : tls.resolve(file));
    }
    PostgresServer server =
        startLocal(
            base,
            List.of(
                "ssl=on",
                "ssl_cert_file=" + tls.resolve("server.crt"),
                "ssl_key_file=" + tls.resolve("server.key"),
                "hba_file=" + tls.resolve("pg_hba.conf")));
    server.certificate = tls.resolve("server.crt");
    return server;
  }

  /**
   * Makes a self-signed certificate for 127.0.0.1 with {@code openssl}: {@code <name>.crt} and its
   * unencrypted key {@code <name>.key} in {@code dir}.
   *
   * @return the certificate's file
   * @throws IllegalStateException if openssl is missing or fails
   */
  public static Path selfSignedCertificate(Path dir, String commonName, String name) {
    Path openssl =
        Binaries.find("openssl")
            .orElseThrow(
                () -> new IllegalStateException("install openssl (apt-get install -y openssl)"));
    Path certificate = dir.resolve(name + ".crt");
    run(
        dir,
        60,
        openssl.toString(),
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=" + commonName,
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        dir.resolve(name + ".key").toString(),
        "-out",
        certificate.toString());
    return certificate;
  }

  /** The user that {@link #startLocalWithTls} servers ask for a clear-text password. */
  public static final String CLEARTEXT_USER = "redlock_cleartext";

  private Path certificate;

  /** The PEM certificate of a {@link #startLocalWithTls} server. */
  public Path certificate() {
    if (certificate == null) {
      throw new IllegalStateException("not a server from startLocalWithTls()");
    }
    return certificate;
  }

  private static PostgresServer startLocal(Path base, List<String> settings) {
    Path initdb = binary("initdb");
    Path postgres = binary("postgres");
    Path data = base.resolve("data");
    copyTemplate(initdb, data);
    int port = FreePorts.find();
    List<String> command = new ArrayList<>(asServerUser());
    command.addAll(
        List.of(
            postgres.toString(),
            "-D",
            data.toString(),
            "-p",
            Integer.toString(port),
            // no Unix socket: its path under a long checkout would pass the 107-byte limit, and the
            // tests connect over TCP
            "-k",
            "",
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=200",
            "-c",
            "shared_buffers=16MB"));
    for (String setting : settings) {
      command.add("-c");
      command.add(setting);
    }
    ManagedProcess process =
        ManagedProcess.start(
            "postgres", command, Map.of(), base, () -> ready(data, port), START_TIMEOUT);
    String url =
        "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=" + USER + "&password=" + PASSWORD;
    return new PostgresServer(url, "local postgres on port " + port, process, null, data, port);
  }

  private static PostgresServer startContainer() {
    GenericContainer<?> c =
        new GenericContainer<>(DockerImageName.parse("postgres:15-alpine"))
            .withEnv("POSTGRES_PASSWORD", PASSWORD)
            .withExposedPorts(5432)
            .withCommand("postgres", "-c", "fsync=off", "-c", "max_connections=200")
            .waitingFor(
                Wait.forLogMessage(".*database system is ready to accept connections.*\\s", 2)
                    .withStartupTimeout(Duration.ofMinutes(2)));
    c.start();
    String url =
        "jdbc:postgresql://"
            + c.getHost()
            + ":"
            + c.getMappedPort(5432)
            + "/postgres?user="
            + USER
            + "&password="
            + PASSWORD;
    return new PostgresServer(url, "container " + c.getContainerName(), null, c, null, -1);
  }

  private static Path binary(String name) {
    List<String> dirs = new ArrayList<>();
    try (var versions = Files.list(Path.of("/usr/lib/postgresql"))) {
      versions
          .sorted(java.util.Comparator.reverseOrder())
          .forEach(v -> dirs.add(v.resolve("bin").toString()));
    } catch (IOException | UncheckedIOException noDebianLayout) {
      // PATH only
    }
    return requireBinary(name, INSTALL, dirs.toArray(String[]::new));
  }

  /** PostgreSQL refuses to run as root: as root, run it as the {@code postgres} system user. */
  private static List<String> asServerUser() {
    return runningAsRoot()
        ? List.of("setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--")
        : List.of();
  }

  private static synchronized void copyTemplate(Path initdb, Path data) {
    if (template == null || !Files.isDirectory(template)) {
      Path dir = Binaries.scratchDirUntilExit("postgres-template");
      handToServerUser(dir);
      Path pwfile = dir.resolve("pwfile");
      try {
        Files.writeString(pwfile, PASSWORD + "\n");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      handToServerUser(pwfile);
      Path tdata = dir.resolve("data");
      List<String> command = new ArrayList<>(asServerUser());
      command.addAll(
          List.of(
              initdb.toString(),
              "-D",
              tdata.toString(),
              "-U",
              USER,
              "--pwfile=" + pwfile,
              "--auth-local=trust",
              "--auth-host=scram-sha-256",
              "--no-sync",
              "-E",
              "UTF8",
              "--locale=C"));
      run(dir, 120, command.toArray(String[]::new));
      template = tdata;
    }
    // cp -a keeps the owner and the 0700 mode PostgreSQL insists on
    handToServerUser(data.getParent());
    run(data.getParent(), 60, "cp", "-a", template.toString(), data.toString());
  }

  private static void handToServerUser(Path path) {
    if (runningAsRoot()) {
      run(path.getParent(), 10, "chown", "postgres:postgres", path.toString());
    }
  }

  /** Ready once the postmaster wrote "ready" into its pid file and accepts TCP connections. */
  private static boolean ready(Path data, int port) {
    try {
      List<String> lines = Files.readAllLines(data.resolve("postmaster.pid"));
      return lines.size() >= 8 && lines.get(7).strip().equals("ready") && accepts(port);
    } catch (IOException notYet) {
      return false;
    }
  }

  /** The JDBC URL, with user and password in its query. */
  public String jdbcUrl() {
    return jdbcUrl;
  }

  /**
   * The same server as a libpq URI for {@code redlock-backend-postgres}: {@code
   * postgresql://user:password@host:port/db?sslmode=disable}, from {@link #jdbcUrl()}.
   */
  public String uri() {
    java.net.URI u = java.net.URI.create(jdbcUrl.substring("jdbc:".length()));
    String user = USER;
    String password = PASSWORD;
    for (String pair : u.getRawQuery() == null ? new String[0] : u.getRawQuery().split("&")) {
      if (pair.startsWith("user=")) {
        user = pair.substring("user=".length());
      } else if (pair.startsWith("password=")) {
        password = pair.substring("password=".length());
      }
    }
    return "postgresql://"
        + user
        + ":"
        + password
        + "@"
        + u.getHost()
        + ":"
        + u.getPort()
        + u.getRawPath()
        + "?sslmode=disable";
  }

  /** Stops a local server cleanly ("fast" shutdown: clients are disconnected). */
  @Override
  public void stop() {
    thaw();
    stopWith("stop", "INT");
  }

  /** Resumes every process of a paused server, so that it can shut down. */
  private void thaw() {
    if (process != null && process.isAlive()) {
      signalAll("CONT");
    }
  }

  /**
   * Freezes a local server (SIGSTOP): the postmaster and every backend process, since each client
   * connection is served by a process of its own. Connections stay open and nothing is answered.
   */
  @Override
  public void pause() {
    requireLocal("pause");
    signalAll("STOP");
  }

  /** Resumes a paused local server: every process of it. */
  @Override
  public void resume() {
    requireLocal("resume");
    signalAll("CONT");
  }

  /**
   * Signals the postmaster and every process it started, one by one: a backend that ends meanwhile
   * is no failure.
   */
  private void signalAll(String signal) {
    long postmaster = process.pid();
    List<Long> pids = new ArrayList<>();
    pids.add(postmaster);
    ProcessHandle.of(postmaster).ifPresent(p -> p.descendants().forEach(d -> pids.add(d.pid())));
    for (long pid : pids) {
      try {
        signal(pid, signal);
      } catch (IllegalStateException gone) {
        if (pid == postmaster && process.isAlive()) {
          throw gone;
        }
      }
    }
  }

  /** Crashes a local server the way {@code pg_ctl -m immediate stop} does (SIGQUIT). */
  public void crash() {
    thaw();
    stopWith("crash", "QUIT");
  }

  /** Starts a stopped local server again on the same port and data folder. */
  public void restart() {
    requireLocal("restart");
    // after a kill, orphaned backends may hold shared memory for a moment: retry a few times
    IllegalStateException last = null;
    for (int attempt = 0; attempt < 5; attempt++) {
      try {
        process.restart(() -> ready(dataDir, port), START_TIMEOUT);
        return;
      } catch (IllegalStateException e) {
        last = e;
        try {
          Thread.sleep(500);
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw e;
        }
      }
    }
    throw last;
  }
}
