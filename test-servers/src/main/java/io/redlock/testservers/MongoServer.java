package io.redlock.testservers;

import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A MongoDB server for a test, obtained in the order of {@code TEST-SERVERS.md}:
 *
 * <ol>
 *   <li>connection strings given in the environment variable {@value #ENVIRONMENT} (several
 *       separated by commas, each starting with {@code mongodb://} or {@code mongodb+srv://}), used
 *       as given: a real MongoDB that must answer, or the test fails;
 *   <li>a Testcontainers {@code mongo} container, only if Docker is available: a real MongoDB;
 *   <li>the <b>stand-in</b>: de.bwaldvogel {@code mongo-java-server} with its memory backend, in
 *       this JVM, bound to a free loopback port. It speaks the MongoDB wire protocol, so the real
 *       driver talks to it over TCP, but it is <em>not</em> MongoDB: it has no authentication, no
 *       replication (so no real write concern), no transactions, no update pipelines, and it
 *       accepts TTL indexes without ever enforcing them.
 * </ol>
 *
 * <p>No real {@code mongod} can be installed on the project's build machines, so without the
 * environment variable or Docker, {@link #start()} gives the stand-in. Tests print {@link
 * #description()}, which always says which kind of server was used and its version as the server
 * itself reports it.
 *
 * <pre>{@code
 * try (MongoServer mongo = MongoServer.start()) {
 *   System.out.println("MongoDB for this test: " + mongo.description());
 *   String uri = mongo.connectionString(); // mongodb://127.0.0.1:40123
 * }
 * Optional<MongoServer> real = MongoServer.startReal(); // never the stand-in
 * try (MongoServer frozen = MongoServer.builder().clockOffset(Duration.ofHours(1)).start()) {
 *   // the stand-in in its own JVM, its clock an hour ahead (libfaketime): pause, stop, restart
 * }
 * }</pre>
 */
public final class MongoServer implements AutoCloseable {
  /** Environment variable with connection strings of real MongoDB servers, comma-separated. */
  public static final String ENVIRONMENT = "REDLOCK_TEST_MONGO";

  /** System property naming the image for Testcontainers, default {@value #DEFAULT_IMAGE}. */
  public static final String IMAGE_PROPERTY = "redlock.test.mongo.image";

  /** The image started when Docker is available. */
  public static final String DEFAULT_IMAGE = "mongo:7.0";

  private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(5);
  private static final AtomicInteger NEXT_EXTERNAL = new AtomicInteger();
  private static final Pattern ENTRY_SEPARATOR = Pattern.compile(",(?=\\s*mongodb(\\+srv)?://)");

  /** Where a server came from. */
  public enum Source {
    /** A connection string from {@value MongoServer#ENVIRONMENT}: a real MongoDB. */
    ENVIRONMENT,
    /** A Testcontainers container: a real MongoDB. */
    CONTAINER,
    /** The in-process mongo-java-server stand-in: not a real MongoDB. */
    STAND_IN
  }

  private final Source source;
  private final String connectionString;
  private final String displayAddress;
  private final String origin;
  private final String serverVersion;
  private final String identity;
  private final StandIn standIn;
  private final Container container;
  private final StandInProcess process;

  private MongoServer(
      Source source,
      String connectionString,
      String origin,
      String serverVersion,
      String identity,
      StandIn standIn,
      Container container) {
    this(source, connectionString, origin, serverVersion, identity, standIn, container, null);
  }

  private MongoServer(
      Source source,
      String connectionString,
      String origin,
      String serverVersion,
      String identity,
      StandIn standIn,
      Container container,
      StandInProcess process) {
    this.process = process;
    this.source = source;
    this.connectionString = connectionString;
    this.displayAddress = redact(connectionString);
    this.origin = origin;
    this.serverVersion = serverVersion;
    this.identity = identity;
    this.standIn = standIn;
    this.container = container;
  }

  /**
   * A server: from {@value #ENVIRONMENT} if set (round robin over its entries), else a container if
   * Docker is available, else the stand-in.
   *
   * @throws IllegalStateException if a server from the environment does not answer, or Docker is
   *     available but the container does not start (never falls back silently)
   */
  public static MongoServer start() {
    Optional<MongoServer> real = startReal();
    return real.isPresent() ? real.get() : startStandIn();
  }

  /**
   * A real MongoDB: from {@value #ENVIRONMENT} if set, else a container if Docker is available,
   * else empty (see {@link #realServerUnavailableReason()}). Never the stand-in.
   *
   * @throws IllegalStateException if a server from the environment does not answer, or Docker is
   *     available but the container does not start
   */
  public static Optional<MongoServer> startReal() {
    List<String> external = environmentConnectionStrings();
    if (!external.isEmpty()) {
      return Optional.of(
          external(external.get(Math.floorMod(NEXT_EXTERNAL.getAndIncrement(), external.size()))));
    }
    if (Container.dockerAvailable()) {
      return Optional.of(Container.start());
    }
    return Optional.empty();
  }

  /** Why {@link #startReal()} finds nothing here, with what to do about it. */
  public static String realServerUnavailableReason() {
    return "no real MongoDB: "
        + ENVIRONMENT
        + " is not set and Docker is not available (set "
        + ENVIRONMENT
        + "=mongodb://host:27017 or start a Docker engine for Testcontainers)";
  }

  /** The in-process stand-in (mongo-java-server, memory backend) on a free loopback port. */
  public static MongoServer startStandIn() {
    StandIn standIn = StandIn.start();
    String uri = "mongodb://127.0.0.1:" + standIn.port();
    MongoWireProbe.Identity reported;
    try {
      reported = MongoWireProbe.identify("127.0.0.1", standIn.port(), PROBE_TIMEOUT);
    } catch (IOException e) {
      standIn.stop();
      throw new IllegalStateException(
          "the MongoDB stand-in at " + uri + " does not answer buildInfo/hello: " + e, e);
    }
    return new MongoServer(
        Source.STAND_IN,
        uri,
        "stand-in de.bwaldvogel mongo-java-server "
            + StandIn.libraryVersion()
            + " (memory backend, in this JVM; not a real mongod)",
        reported.version(),
        reported.describe(),
        standIn,
        null);
  }

  /**
   * A builder for a stand-in in its own JVM process, which tests can freeze, crash and restart, and
   * run with a clock that differs from theirs.
   */
  public static Builder builder() {
    return new Builder();
  }

  /** Options for a stand-in in its own process. Not thread-safe. */
  public static final class Builder {
    private Duration clockOffset;
    private Duration startTimeout = Duration.ofSeconds(60);

    private Builder() {}

    /**
     * Runs the stand-in's JVM under libfaketime with its wall clock moved by {@code offset}
     * (monotonic time stays real), so that its {@code $$NOW} and {@code $currentDate} differ from
     * the test's clock. Needs libfaketime ({@code apt-get install -y libfaketime}).
     */
    public Builder clockOffset(Duration offset) {
      this.clockOffset = java.util.Objects.requireNonNull(offset, "offset");
      return this;
    }

    /** How long the process may take to answer after start (default 60 s). */
    public Builder startTimeout(Duration startTimeout) {
      this.startTimeout = java.util.Objects.requireNonNull(startTimeout, "startTimeout");
      return this;
    }

    /**
     * Starts the stand-in in its own JVM on a free loopback port.
     *
     * @throws IllegalStateException if libfaketime is needed but missing, or the process does not
     *     answer in time
     */
    public MongoServer start() {
      StandInProcess p = StandInProcess.start(clockOffset, startTimeout);
      String uri = "mongodb://127.0.0.1:" + p.port();
      MongoWireProbe.Identity id;
      try {
        id = MongoWireProbe.identify("127.0.0.1", p.port(), PROBE_TIMEOUT);
      } catch (IOException e) {
        p.close();
        throw new IllegalStateException("the stand-in process at " + uri + " stopped answering", e);
      }
      return new MongoServer(
          Source.STAND_IN,
          uri,
          "stand-in de.bwaldvogel mongo-java-server "
              + StandIn.libraryVersion()
              + " (memory backend, own process pid "
              + p.pid()
              + (clockOffset == null ? "" : ", clock moved by " + clockOffset + " with libfaketime")
              + "; not a real mongod)",
          id.version(),
          id.describe(),
          null,
          null,
          p);
    }
  }

  /**
   * True if {@link Builder#clockOffset} can work here: libfaketime is installed ({@code apt-get
   * install -y libfaketime}).
   */
  public static boolean canMoveClock() {
    return StandInProcess.libfaketime().isPresent();
  }

  /** Whether {@link #pause()} can freeze this server: a stand-in process or a container. */
  public boolean canPause() {
    return process != null || container != null;
  }

  /**
   * Freezes the server: connections stay open and nothing is answered ({@code SIGSTOP} for a
   * stand-in process, {@code docker pause} for a container).
   *
   * @throws IllegalStateException for the in-process stand-in or a server from the environment
   */
  public void pause() {
    if (process != null) {
      process.pause();
    } else if (container != null) {
      container.pause();
    } else {
      throw new IllegalStateException(
          "cannot pause " + displayAddress + ": use MongoServer.builder().start() for a process");
    }
  }

  /** Resumes a server frozen by {@link #pause()}. */
  public void resume() {
    if (process != null) {
      process.resume();
    } else if (container != null) {
      container.resume();
    } else {
      throw new IllegalStateException("cannot resume " + displayAddress + ": it cannot pause");
    }
  }

  /** The connection strings in {@value #ENVIRONMENT}, in order; empty if unset. */
  public static List<String> environmentConnectionStrings() {
    return parseEntries(System.getenv(ENVIRONMENT));
  }

  /** Splits a value of {@value #ENVIRONMENT} into connection strings. */
  static List<String> parseEntries(String value) {
    if (value == null || value.isBlank()) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    String[] parts =
        value.contains("://") ? ENTRY_SEPARATOR.split(value) : value.split(","); // bare host:port
    for (String part : parts) {
      String entry = part.strip();
      if (entry.isEmpty()) {
        continue;
      }
      out.add(entry.contains("://") ? entry : "mongodb://" + entry);
    }
    return out;
  }

  static MongoServer external(String uri) {
    String lower = uri.toLowerCase(Locale.ROOT);
    if (!lower.startsWith("mongodb://") && !lower.startsWith("mongodb+srv://")) {
      throw new IllegalStateException(
          ENVIRONMENT
              + " entry '"
              + redact(uri)
              + "' is not a MongoDB connection string; expected e.g. mongodb://127.0.0.1:27017");
    }
    String version;
    String identity;
    if (lower.startsWith("mongodb+srv://") || usesTls(lower)) {
      version = "unknown";
      identity = "version not probed (TLS or DNS seed list)";
    } else {
      HostPort first = firstHost(uri);
      try {
        MongoWireProbe.Identity id =
            MongoWireProbe.identify(first.host(), first.port(), PROBE_TIMEOUT);
        version = id.version();
        identity = id.describe();
      } catch (IOException e) {
        throw new IllegalStateException(
            ENVIRONMENT
                + " names "
                + redact(uri)
                + " but "
                + first
                + " does not answer as a MongoDB server ("
                + e.getMessage()
                + "); start it, fix the address, or unset "
                + ENVIRONMENT
                + " to use Docker or the stand-in",
            e);
      }
    }
    return new MongoServer(
        Source.ENVIRONMENT, uri, "real MongoDB from " + ENVIRONMENT, version, identity, null, null);
  }

  /** Where this server came from. */
  public Source source() {
    return source;
  }

  /** True for a real MongoDB (environment or container), false for the stand-in. */
  public boolean isReal() {
    return source != Source.STAND_IN;
  }

  /**
   * The connection string to give the driver, e.g. {@code mongodb://127.0.0.1:40123}. May contain a
   * password for servers from the environment: print {@link #description()} instead.
   */
  public String connectionString() {
    return connectionString;
  }

  /** The server's version as it reports it ({@code buildInfo}), or {@code "unknown"}. */
  public String serverVersion() {
    return serverVersion;
  }

  /**
   * Which server this is, for test output, without passwords: kind, origin, reported version and
   * address, e.g. {@code stand-in de.bwaldvogel mongo-java-server 1.47.0 (memory backend, in this
   * JVM; not a real mongod), reports MongoDB 5.0.0 (wire 8, standalone), at
   * mongodb://127.0.0.1:40123}.
   */
  public String description() {
    String reports = isReal() ? identity : "reports " + identity;
    return origin + ", " + reports + ", at " + displayAddress;
  }

  /**
   * True if {@link #stop()} and {@link #restart()} can act on this server (not for environment).
   */
  public boolean canStop() {
    return source != Source.ENVIRONMENT;
  }

  /** True unless {@link #stop()} was called and {@link #restart()} not yet. */
  public boolean isRunning() {
    if (standIn != null) {
      return standIn.isRunning();
    }
    if (process != null) {
      return process.isRunning();
    }
    return container == null || container.isRunning();
  }

  /**
   * Makes the server unreachable, as a crash would: the in-process stand-in shuts down (open
   * connections are closed, its data is lost); a stand-in process is killed ({@code SIGKILL}); a
   * container is paused (connections hang).
   *
   * @throws IllegalStateException for a server from the environment, which tests do not control
   */
  public void stop() {
    requireControl("stop");
    if (standIn != null) {
      standIn.stop();
    } else if (process != null) {
      process.kill();
    } else {
      container.pause();
    }
  }

  /**
   * Brings a stopped server back on the same address: a stand-in starts empty (like a restart
   * without persistence); a container resumes where it was.
   */
  public void restart() {
    requireControl("restart");
    if (standIn != null) {
      standIn.restart();
    } else if (process != null) {
      process.restart();
    } else {
      container.resume();
    }
  }

  private void requireControl(String action) {
    if (!canStop()) {
      throw new IllegalStateException(
          "cannot " + action + " " + displayAddress + ": it comes from " + ENVIRONMENT);
    }
  }

  /** Stops a server this JVM started; does nothing for one from the environment. Idempotent. */
  @Override
  public void close() {
    if (standIn != null) {
      standIn.stop();
    }
    if (process != null) {
      process.close();
    }
    if (container != null) {
      container.close();
    }
  }

  /** Same as {@link #description()}. */
  @Override
  public String toString() {
    return description();
  }

  // ---------------------------------------------------------------------------------------------

  private static boolean usesTls(String lowerUri) {
    return lowerUri.matches(".*[?&;](tls|ssl)=true.*");
  }

  private record HostPort(String host, int port) {
    @Override
    public String toString() {
      return host + ":" + port;
    }
  }

  /** The first host of a {@code mongodb://} connection string. */
  private static HostPort firstHost(String uri) {
    String rest = uri.substring(uri.indexOf("://") + 3);
    int end = rest.length();
    for (char c : new char[] {'/', '?'}) {
      int i = rest.indexOf(c);
      if (i >= 0 && i < end) {
        end = i;
      }
    }
    String hosts = rest.substring(0, end);
    hosts = hosts.substring(hosts.lastIndexOf('@') + 1);
    String first = hosts.split(",")[0];
    try {
      URI parsed = new URI("mongodb://" + first);
      String host = parsed.getHost();
      if (host == null) {
        throw new IllegalStateException(
            ENVIRONMENT + " entry '" + redact(uri) + "' has no host; expected mongodb://host:port");
      }
      return new HostPort(
          host.replace("[", "").replace("]", ""), parsed.getPort() < 0 ? 27017 : parsed.getPort());
    } catch (java.net.URISyntaxException e) {
      throw new IllegalStateException(
          ENVIRONMENT + " entry '" + redact(uri) + "' has a malformed host: " + e.getMessage(), e);
    }
  }

  private static final Pattern PASSWORD = Pattern.compile("(://[^/@:?#]*:)([^/@]*)(@)");

  /** The connection string without its password. */
  static String redact(String uri) {
    Matcher m = PASSWORD.matcher(uri);
    String out = m.replaceAll("$1***$3");
    return out.replaceAll("(?i)([?&;][a-z]*password=)[^&;]*", "$1***");
  }

  // ---------------------------------------------------------------------------------------------

  /** The in-process mongo-java-server. */
  private static final class StandIn {
    private static final int BIND_ATTEMPTS = 20;

    private final int port;
    private de.bwaldvogel.mongo.MongoServer server;

    private StandIn(de.bwaldvogel.mongo.MongoServer server, int port) {
      this.server = server;
      this.port = port;
    }

    static StandIn start() {
      de.bwaldvogel.mongo.MongoServer server = new de.bwaldvogel.mongo.MongoServer(backend());
      // Port 0: the kernel picks a free port atomically, so no other process can take it first.
      server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      return new StandIn(server, server.getLocalAddress().getPort());
    }

    private static MemoryBackend backend() {
      return new MemoryBackend();
    }

    int port() {
      return port;
    }

    synchronized boolean isRunning() {
      return server != null;
    }

    synchronized void stop() {
      if (server != null) {
        server.shutdownNow();
        server = null;
      }
    }

    synchronized void restart() {
      if (server != null) {
        throw new IllegalStateException("the stand-in on port " + port + " is still running");
      }
      RuntimeException last = null;
      // The port was just released; another process could grab it, so try a bounded few times.
      for (int attempt = 0; attempt < BIND_ATTEMPTS; attempt++) {
        de.bwaldvogel.mongo.MongoServer fresh = new de.bwaldvogel.mongo.MongoServer(backend());
        try {
          fresh.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
          server = fresh;
          return;
        } catch (RuntimeException e) {
          fresh.shutdownNow();
          last = e;
          sleep(50);
        }
      }
      throw new IllegalStateException(
          "could not restart the MongoDB stand-in on port " + port + " (port taken?)", last);
    }

    /** The mongo-java-server version, from the name of the jar it was loaded from. */
    static String libraryVersion() {
      try {
        Path jar =
            Path.of(
                de.bwaldvogel.mongo.MongoServer.class
                    .getProtectionDomain()
                    .getCodeSource()
                    .getLocation()
                    .toURI());
        Matcher m =
            Pattern.compile("mongo-java-server-core-(.+)\\.jar").matcher(jar.getFileName() + "");
        return m.matches() ? m.group(1) : "(version unknown: loaded from " + jar + ")";
      } catch (RuntimeException | java.net.URISyntaxException e) {
        return "(version unknown)";
      }
    }
  }

  // ---------------------------------------------------------------------------------------------

  /** The stand-in in a child JVM ({@link MongoStandInMain}), optionally under libfaketime. */
  private static final class StandInProcess {
    private static final List<String> LIBFAKETIME =
        List.of(
            "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/faketime/libfaketime.so.1",
            "/usr/local/lib/faketime/libfaketime.so.1");

    private final int port;
    private final ManagedProcess process;
    private final Duration startTimeout;

    private StandInProcess(int port, ManagedProcess process, Duration startTimeout) {
      this.port = port;
      this.process = process;
      this.startTimeout = startTimeout;
    }

    static Optional<String> libfaketime() {
      return LIBFAKETIME.stream()
          .filter(p -> java.nio.file.Files.isReadable(Path.of(p)))
          .findFirst();
    }

    static StandInProcess start(Duration clockOffset, Duration startTimeout) {
      java.util.Map<String, String> env = new java.util.LinkedHashMap<>();
      if (clockOffset != null) {
        String lib =
            libfaketime()
                .orElseThrow(
                    () ->
                        new IllegalStateException(
                            "a MongoDB stand-in with a moved clock needs libfaketime, found in"
                                + " none of "
                                + LIBFAKETIME
                                + "; install it: apt-get install -y libfaketime"));
        long seconds = clockOffset.getSeconds();
        env.put("LD_PRELOAD", lib);
        env.put("FAKETIME", (seconds >= 0 ? "+" : "") + seconds);
        env.put("FAKETIME_DONT_FAKE_MONOTONIC", "1"); // timers and nanoTime stay real
      }
      int port = FreePorts.find();
      List<String> command =
          List.of(
              Path.of(System.getProperty("java.home"), "bin", "java").toString(),
              "-Xmx96m",
              "-XX:+UseSerialGC",
              "-XX:TieredStopAtLevel=1",
              "-cp",
              System.getProperty("java.class.path"),
              MongoStandInMain.class.getName(),
              Integer.toString(port));
      ManagedProcess process =
          ManagedProcess.start(
              "mongo-stand-in-" + port,
              command,
              env,
              Binaries.scratchDir("mongo-stand-in-" + port),
              () -> answers(port),
              startTimeout);
      return new StandInProcess(port, process, startTimeout);
    }

    private static boolean answers(int port) {
      try {
        MongoWireProbe.identify("127.0.0.1", port, Duration.ofMillis(500));
        return true;
      } catch (IOException e) {
        return false;
      }
    }

    int port() {
      return port;
    }

    long pid() {
      return process.pid();
    }

    boolean isRunning() {
      return process.isAlive();
    }

    void kill() {
      process.kill();
    }

    void restart() {
      process.restart(() -> answers(port), startTimeout);
    }

    void pause() {
      process.pause();
    }

    void resume() {
      process.resume();
    }

    void close() {
      process.close();
    }
  }

  // ---------------------------------------------------------------------------------------------

  /** A Testcontainers {@code mongo} container. Loaded only when Docker is available. */
  private static final class Container {
    private static Boolean available;
    private final org.testcontainers.containers.GenericContainer<?> container;
    private boolean paused;

    private Container(org.testcontainers.containers.GenericContainer<?> container) {
      this.container = container;
    }

    static synchronized boolean dockerAvailable() {
      if (available == null) {
        try {
          available = org.testcontainers.DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError e) {
          available = false;
        }
      }
      return available;
    }

    static MongoServer start() {
      String image = System.getProperty(IMAGE_PROPERTY, DEFAULT_IMAGE);
      org.testcontainers.containers.GenericContainer<?> generic =
          new org.testcontainers.containers.GenericContainer<>(
              org.testcontainers.utility.DockerImageName.parse(image));
      generic
          .withExposedPorts(27017)
          .waitingFor(
              org.testcontainers.containers.wait.strategy.Wait.forLogMessage(
                      "(?i).*waiting for connections.*", 1)
                  .withStartupTimeout(Duration.ofMinutes(2)));
      try {
        generic.start();
      } catch (RuntimeException e) {
        generic.close();
        throw new IllegalStateException(
            "Docker is available but the " + image + " container did not start: " + e, e);
      }
      Container c = new Container(generic);
      String host = generic.getHost();
      int port = generic.getMappedPort(27017);
      String uri = "mongodb://" + host + ":" + port;
      MongoWireProbe.Identity id;
      try {
        id = MongoWireProbe.identify(host, port, PROBE_TIMEOUT);
      } catch (IOException e) {
        c.close();
        throw new IllegalStateException(
            "the " + image + " container started but does not answer at " + uri + ": " + e, e);
      }
      return new MongoServer(
          Source.CONTAINER,
          uri,
          "real MongoDB in a Testcontainers container ("
              + image
              + ", "
              + generic.getContainerId().substring(0, 12)
              + ")",
          id.version(),
          id.describe(),
          null,
          c);
    }

    synchronized boolean isRunning() {
      return !paused && container.isRunning();
    }

    synchronized void pause() {
      if (!paused) {
        container.getDockerClient().pauseContainerCmd(container.getContainerId()).exec();
        paused = true;
      }
    }

    synchronized void resume() {
      if (paused) {
        container.getDockerClient().unpauseContainerCmd(container.getContainerId()).exec();
        paused = false;
      }
    }

    synchronized void close() {
      try {
        resume();
      } catch (RuntimeException ignored) {
        // best effort: the container is removed next anyway
      }
      container.close();
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while restarting the MongoDB stand-in", e);
    }
  }
}
