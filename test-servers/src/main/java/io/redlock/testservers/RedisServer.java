package io.redlock.testservers;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

/**
 * A real Redis server for a test, obtained in the order of {@code TEST-SERVERS.md}:
 *
 * <ol>
 *   <li>addresses given in the environment variable {@value #ENVIRONMENT} (comma-separated {@code
 *       host:port}), used as given, for servers with the default configuration;
 *   <li>a Testcontainers container, only if Docker is available;
 *   <li>a local {@code redis-server} process on a free loopback port: the binary on the PATH, else
 *       the one bundled in the Maven artifact {@code com.github.codemonstur:embedded-redis}.
 * </ol>
 *
 * <p>If none can be had, {@link Builder#start()} throws {@link IllegalStateException} saying what
 * to install: a test that needs Redis fails, it never skips.
 *
 * <p>Requests that only a process this test controls can satisfy (fault injection, append-only
 * file, TLS, a chosen binary or environment, extra arguments) always start a local process.
 *
 * <pre>{@code
 * try (RedisServer redis = RedisServer.start()) {
 *   String uri = redis.uri(); // redis://127.0.0.1:40123
 * }
 * try (RedisServer redis = RedisServer.builder().password("s3cret").faultInjection().start()) {
 *   redis.pause(); ... redis.resume(); redis.kill(); redis.restart();
 * }
 * }</pre>
 */
public final class RedisServer implements AutoCloseable {
  /** Environment variable with explicit server addresses, comma-separated {@code host:port}. */
  public static final String ENVIRONMENT = "REDLOCK_TEST_REDIS";

  private static final Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(20);
  private static final AtomicInteger NEXT_EXTERNAL = new AtomicInteger();

  /** Where a server came from. */
  public enum Source {
    /** An address from {@value RedisServer#ENVIRONMENT}; nothing was started. */
    ENVIRONMENT,
    /** A Testcontainers container. */
    CONTAINER,
    /** A {@code redis-server} process started by this JVM. */
    LOCAL_PROCESS
  }

  private final String host;
  private final int port;
  private final String password;
  private final boolean tls;
  private final Source source;
  private final String description;
  private final ManagedProcess process;
  private final AutoCloseable container;
  private final Duration startTimeout;

  private RedisServer(
      String host,
      int port,
      String password,
      boolean tls,
      Source source,
      String description,
      ManagedProcess process,
      AutoCloseable container,
      Duration startTimeout) {
    this.host = host;
    this.port = port;
    this.password = password;
    this.tls = tls;
    this.source = source;
    this.description = description;
    this.process = process;
    this.container = container;
    this.startTimeout = startTimeout;
  }

  /** A server with the default configuration (no password, no persistence). */
  public static RedisServer start() {
    return builder().start();
  }

  /** True if {@link Builder#clockOffset} can work here: libfaketime is installed. */
  public static boolean canMoveClock() {
    return Binaries.libfaketime().isPresent();
  }

  /** A builder for a server with options; {@link Builder#start()} may be called many times. */
  public static Builder builder() {
    return new Builder();
  }

  /** The host to connect to (an IP literal, normally {@code 127.0.0.1}). */
  public String host() {
    return host;
  }

  /** The port to connect to. */
  public int port() {
    return port;
  }

  /** {@code host:port}. */
  public String address() {
    return host + ":" + port;
  }

  /** The password the server requires, if any. */
  public Optional<String> password() {
    return Optional.ofNullable(password);
  }

  /** True if the server speaks TLS only (connect with {@code rediss://}). */
  public boolean tls() {
    return tls;
  }

  /** Where this server came from. */
  public Source source() {
    return source;
  }

  /**
   * A URI for the server, with its password if it has one: {@code redis://127.0.0.1:P} or {@code
   * redis://:PASSWORD@127.0.0.1:P} ({@code rediss://} with TLS). Contains the password: do not log.
   */
  public String uri() {
    String auth =
        password == null
            ? ""
            : ":"
                + java.net.URLEncoder.encode(password, StandardCharsets.UTF_8).replace("+", "%20")
                + "@";
    return (tls ? "rediss://" : "redis://") + auth + hostForUri() + ":" + port;
  }

  /** {@link #uri()} without the password. */
  public String uriWithoutPassword() {
    return (tls ? "rediss://" : "redis://") + hostForUri() + ":" + port;
  }

  private String hostForUri() {
    return host.contains(":") ? "[" + host + "]" : host;
  }

  /** True if the server answers PING now (with its password, over TLS if it uses TLS). */
  public boolean ping() {
    try {
      return isPong(probe(host, port, password, tls, Duration.ofMillis(500)));
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** True if this server's process runs (always true for servers that this JVM did not start). */
  public boolean isRunning() {
    return process == null || process.isAlive();
  }

  /** Kills the server at once ({@code SIGKILL}), as a crash would. Its data is lost unless AOF. */
  public void kill() {
    requireProcess("kill").kill();
  }

  /** Starts the server again on the same port after {@link #kill()} and waits until it answers. */
  public void restart() {
    requireProcess("restart").restart(this::answersPing, startTimeout);
  }

  /** Freezes the server ({@code SIGSTOP}): connections stay open, nothing is answered. */
  public void pause() {
    requireProcess("pause").pause();
  }

  /** Resumes a server frozen by {@link #pause()}. */
  public void resume() {
    requireProcess("resume").resume();
  }

  /** The process id of a local server. */
  public long pid() {
    return requireProcess("pid").pid();
  }

  /** The last lines of the server's log (local processes only; otherwise a note). */
  public String logTail() {
    return process == null ? "(no log: " + description + ")" : process.logTail();
  }

  /** The working directory of a local server (its AOF lives there). */
  public Optional<Path> workDir() {
    return process == null ? Optional.empty() : Optional.of(process.workDir());
  }

  private ManagedProcess requireProcess(String action) {
    if (process == null) {
      throw new IllegalStateException(
          "cannot "
              + action
              + " "
              + description
              + ": fault injection needs a process this test started;"
              + " request one with RedisServer.builder().faultInjection().start()");
    }
    return process;
  }

  private boolean answersPing() {
    try {
      return isPong(probe(host, port, password, tls, Duration.ofMillis(500)));
    } catch (IOException e) {
      return false;
    }
  }

  /** Stops a server this JVM started; does nothing for an external one. Idempotent. */
  @Override
  public void close() {
    if (process != null) {
      process.close();
    }
    if (container != null) {
      try {
        container.close();
      } catch (Exception e) {
        throw new IllegalStateException("could not stop " + description, e);
      }
    }
  }

  /** A description without the password, e.g. {@code redis 127.0.0.1:40123 (local process)}. */
  @Override
  public String toString() {
    return description + (process == null ? "" : " pid " + (isRunning() ? process.pid() : "-"));
  }

  /** Options for a server. Not thread-safe. */
  public static final class Builder {
    private String password;
    private boolean appendOnly;
    private boolean faultInjection;
    private boolean bundledBinary;
    private Path binary;
    private final Map<String, String> environment = new LinkedHashMap<>();
    private final List<String> extraArgs = new ArrayList<>();
    private Path tlsCertificate;
    private Path tlsKey;
    private Duration startTimeout = DEFAULT_START_TIMEOUT;

    private Builder() {}

    /** The server requires this password ({@code requirepass}). */
    public Builder password(String password) {
      if (password == null || password.isEmpty()) {
        throw new IllegalArgumentException("password must be non-empty");
      }
      this.password = password;
      return this;
    }

    /**
     * Persist every write before answering ({@code --appendonly yes --appendfsync always}), so data
     * survives {@link RedisServer#kill()} and {@link RedisServer#restart()}.
     */
    public Builder appendOnly() {
      this.appendOnly = true;
      return this;
    }

    /** A local process that {@link RedisServer#kill()}, pause and restart can act on. */
    public Builder faultInjection() {
      this.faultInjection = true;
      return this;
    }

    /**
     * Use the binary bundled in {@code com.github.codemonstur:embedded-redis} (Redis 6.2) even if
     * one is on the PATH: e.g. under libfaketime, which hangs Debian's build.
     */
    public Builder bundledBinary() {
      this.bundledBinary = true;
      return this;
    }

    /**
     * Runs the server with its wall clock moved by {@code offset} (whole seconds) under
     * libfaketime, with the monotonic clock left real: the bundled binary (Debian's hangs under
     * libfaketime) with {@code LD_PRELOAD} and {@code FAKETIME} set. {@code TIME} and key expiry
     * then follow the moved clock.
     *
     * @throws IllegalStateException if libfaketime is not installed (see {@link #canMoveClock()})
     */
    public Builder clockOffset(Duration offset) {
      Path lib =
          Binaries.libfaketime()
              .orElseThrow(
                  () ->
                      new IllegalStateException(
                          "a Redis server with a moved clock needs libfaketime; install it:"
                              + " apt-get install -y libfaketime"));
      long seconds = Objects.requireNonNull(offset, "offset").getSeconds();
      bundledBinary();
      environment("LD_PRELOAD", lib.toString());
      environment("FAKETIME", (seconds >= 0 ? "+" : "") + seconds);
      environment("FAKETIME_DONT_FAKE_MONOTONIC", "1");
      return this;
    }

    /** Use this {@code redis-server} executable. */
    public Builder binary(Path binary) {
      this.binary = Objects.requireNonNull(binary, "binary");
      return this;
    }

    /** An environment variable for the server process, e.g. {@code LD_PRELOAD}. */
    public Builder environment(String name, String value) {
      environment.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /** More {@code redis-server} arguments, e.g. {@code "--maxmemory", "10mb"}. */
    public Builder extraArgs(String... args) {
      extraArgs.addAll(List.of(args));
      return this;
    }

    /**
     * Listen with TLS only, using this PEM certificate and unencrypted PEM key; clients are not
     * asked for certificates. Connect with {@code rediss://}.
     */
    public Builder tls(Path certificate, Path key) {
      this.tlsCertificate = Objects.requireNonNull(certificate, "certificate").toAbsolutePath();
      this.tlsKey = Objects.requireNonNull(key, "key").toAbsolutePath();
      return this;
    }

    /** How long a local server may take to answer PING after start (default 20 s). */
    public Builder startTimeout(Duration startTimeout) {
      this.startTimeout = Objects.requireNonNull(startTimeout, "startTimeout");
      return this;
    }

    /** True if a server with these options may be one given in the environment. */
    boolean plain() {
      return password == null && !needsOwnProcess();
    }

    private boolean needsOwnProcess() {
      return appendOnly
          || faultInjection
          || bundledBinary
          || binary != null
          || !environment.isEmpty()
          || !extraArgs.isEmpty()
          || tlsCertificate != null;
    }

    /**
     * Obtains a server: from {@value RedisServer#ENVIRONMENT} if the options are the defaults, else
     * from Docker if available and nothing needs a local process, else a local process.
     *
     * @throws IllegalStateException if no server can be had, saying what to install
     */
    public RedisServer start() {
      if (plain()) {
        List<String> external = externalAddresses();
        if (!external.isEmpty()) {
          return external(
              external.get(Math.floorMod(NEXT_EXTERNAL.getAndIncrement(), external.size())));
        }
      }
      if (!needsOwnProcess() && Docker.available()) {
        return Docker.start(password);
      }
      return startLocal();
    }

    RedisServer startLocal() {
      Path executable = binary != null ? binary : LocalBinary.find(bundledBinary);
      int port = FreePorts.find();
      Path dir = Binaries.scratchDir("redis-" + port);
      List<String> command = new ArrayList<>();
      command.add(executable.toString());
      if (tlsCertificate != null) {
        command.addAll(
            List.of(
                "--port",
                "0",
                "--tls-port",
                Integer.toString(port),
                "--tls-cert-file",
                tlsCertificate.toString(),
                "--tls-key-file",
                tlsKey.toString(),
                "--tls-auth-clients",
                "no"));
      } else {
        command.addAll(List.of("--port", Integer.toString(port)));
      }
      command.addAll(
          List.of(
              "--bind", "127.0.0.1", "--save", "", "--daemonize", "no", "--dir", dir.toString()));
      if (appendOnly) {
        command.addAll(List.of("--appendonly", "yes", "--appendfsync", "always"));
      } else {
        command.addAll(List.of("--appendonly", "no"));
      }
      if (password != null) {
        command.addAll(List.of("--requirepass", password));
      }
      command.addAll(extraArgs);
      boolean useTls = tlsCertificate != null;
      String pw = password;
      ManagedProcess process =
          ManagedProcess.start(
              "redis-" + port,
              command,
              environment,
              dir,
              () -> {
                try {
                  return isPong(probe("127.0.0.1", port, pw, useTls, Duration.ofMillis(500)));
                } catch (IOException e) {
                  return false;
                }
              },
              startTimeout);
      return new RedisServer(
          "127.0.0.1",
          port,
          password,
          useTls,
          Source.LOCAL_PROCESS,
          "redis 127.0.0.1:" + port + " (local process " + executable + ")",
          process,
          null,
          startTimeout);
    }
  }

  static List<String> externalAddresses() {
    String value = System.getenv(ENVIRONMENT);
    if (value == null || value.isBlank()) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    for (String part : value.split(",")) {
      if (!part.isBlank()) {
        out.add(part.strip());
      }
    }
    return out;
  }

  static RedisServer external(String address) {
    String text = address.replaceFirst("^rediss?://", "");
    int colon = text.lastIndexOf(':');
    if (colon <= 0 || colon == text.length() - 1) {
      throw new IllegalStateException(
          ENVIRONMENT + " entry '" + address + "' is not host:port; expected e.g. 127.0.0.1:6379");
    }
    String host = text.substring(0, colon).replace("[", "").replace("]", "");
    int port;
    try {
      port = Integer.parseInt(text.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalStateException(
          ENVIRONMENT + " entry '" + address + "' has no numeric port; expected host:port", e);
    }
    return new RedisServer(
        host,
        port,
        null,
        false,
        Source.ENVIRONMENT,
        "redis " + host + ":" + port + " (from " + ENVIRONMENT + ")",
        null,
        null,
        DEFAULT_START_TIMEOUT);
  }

  private static boolean isPong(String line) {
    return line != null && line.startsWith("+PONG");
  }

  /**
   * Sends AUTH (if a password is given) and PING and returns the reply to PING, e.g. {@code +PONG},
   * {@code -LOADING ...}, {@code -NOAUTH ...}.
   */
  static String probe(String host, int port, String password, boolean tls, Duration timeout)
      throws IOException {
    return call(host, port, password, tls, timeout, "PING");
  }

  /**
   * Sends one command on a fresh connection (after AUTH if the server has a password) and returns
   * the reply as text: {@code +OK}, {@code -ERR ...}, {@code :1}, the contents of a bulk string, or
   * {@code null} for a nil bulk string. Arrays are not decoded (their header is returned). For
   * preparing and inspecting a test server without a Redis client library.
   *
   * @throws UncheckedIOException if the server cannot be reached within 2 s
   */
  public String command(String... args) {
    try {
      return call(host, port, password, tls, Duration.ofSeconds(2), args);
    } catch (IOException e) {
      throw new UncheckedIOException("could not send " + args[0] + " to " + description, e);
    }
  }

  private static String call(
      String host, int port, String password, boolean tls, Duration timeout, String... args)
      throws IOException {
    int millis = (int) Math.max(1, timeout.toMillis());
    try (Socket socket = tls ? trustingTlsSocket() : new Socket()) {
      socket.connect(new InetSocketAddress(host, port), millis);
      socket.setSoTimeout(millis);
      if (socket instanceof SSLSocket ssl) {
        ssl.startHandshake();
      }
      OutputStream out = socket.getOutputStream();
      InputStream in = new java.io.BufferedInputStream(socket.getInputStream());
      if (password != null) {
        out.write(resp("AUTH", password));
        out.flush();
        readLine(in); // the command below reports NOAUTH if this failed
      }
      out.write(resp(args));
      out.flush();
      String line = readLine(in);
      if (line.startsWith("$")) {
        int length = Integer.parseInt(line.substring(1));
        if (length < 0) {
          return null;
        }
        byte[] bulk = in.readNBytes(length + 2); // the value and its CRLF
        return new String(bulk, 0, Math.min(length, bulk.length), StandardCharsets.UTF_8);
      }
      return line;
    }
  }

  private static byte[] resp(String... args) {
    StringBuilder sb = new StringBuilder().append('*').append(args.length).append("\r\n");
    for (String arg : args) {
      sb.append('$')
          .append(arg.getBytes(StandardCharsets.UTF_8).length)
          .append("\r\n")
          .append(arg)
          .append("\r\n");
    }
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static String readLine(InputStream in) throws IOException {
    java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream();
    for (int i = 0; i < 65_536; i++) {
      int b = in.read();
      if (b < 0 || b == '\n') {
        break;
      }
      if (b != '\r') {
        line.write(b);
      }
    }
    return line.toString(StandardCharsets.UTF_8);
  }

  /** A TLS socket that accepts any certificate: only for probing a test server's readiness. */
  private static Socket trustingTlsSocket() throws IOException {
    try {
      SSLContext context = SSLContext.getInstance("TLS");
      TrustManager trustAll =
          new X509TrustManager() {
            @Override
            public void checkClientTrusted(X509Certificate[] chain, String authType) {}

            @Override
            public void checkServerTrusted(X509Certificate[] chain, String authType) {}

            @Override
            public X509Certificate[] getAcceptedIssuers() {
              return new X509Certificate[0];
            }
          };
      context.init(null, new TrustManager[] {trustAll}, new SecureRandom());
      return context.getSocketFactory().createSocket();
    } catch (java.security.GeneralSecurityException e) {
      throw new IOException("TLS is not available in this JVM", e);
    }
  }

  /** Finds a {@code redis-server} executable: on the PATH, else bundled in embedded-redis. */
  static final class LocalBinary {
    private static Path bundled;

    private LocalBinary() {}

    static Path find(boolean bundledOnly) {
      if (!bundledOnly) {
        Optional<Path> onPath = Binaries.find("redis-server", "/usr/bin", "/usr/local/bin");
        if (onPath.isPresent()) {
          return onPath.get();
        }
      }
      return bundled(bundledOnly);
    }

    private static synchronized Path bundled(boolean asked) {
      if (bundled != null) {
        return bundled;
      }
      try {
        Path dir = Path.of("target", "redis-bin").toAbsolutePath();
        java.nio.file.Files.createDirectories(dir);
        // Extracts the binary for this OS and architecture and marks it executable.
        java.io.File file =
            redis.embedded.core.ExecutableProvider.newJarResourceProvider(dir.toFile()).get();
        bundled = file.toPath();
        return bundled;
      } catch (IOException | RuntimeException | LinkageError e) {
        throw new IllegalStateException(
            "no Redis server for tests: "
                + (asked ? "" : "no redis-server on the PATH, ")
                + ENVIRONMENT
                + " is not set"
                + (asked ? "" : ", Docker is not available")
                + ", and the redis-server bundled in com.github.codemonstur:embedded-redis could"
                + " not be used on "
                + System.getProperty("os.name")
                + "/"
                + System.getProperty("os.arch")
                + " ("
                + e
                + "). Install Redis (Debian: apt-get install -y redis-server) or set "
                + ENVIRONMENT
                + "=host:port,host:port,...",
            e);
      }
    }
  }

  /** The Testcontainers path, kept apart so its classes load only when Docker is there. */
  static final class Docker {
    private static Boolean available;

    private Docker() {}

    static synchronized boolean available() {
      if (available == null) {
        try {
          available = org.testcontainers.DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError e) {
          available = false;
        }
      }
      return available;
    }

    static RedisServer start(String password) {
      org.testcontainers.containers.GenericContainer<?> container =
          new org.testcontainers.containers.GenericContainer<>(
              org.testcontainers.utility.DockerImageName.parse("redis:7.2"));
      List<String> command =
          new ArrayList<>(List.of("redis-server", "--save", "", "--appendonly", "no"));
      if (password != null) {
        command.addAll(List.of("--requirepass", password));
      }
      container.withExposedPorts(6379).withCommand(command.toArray(String[]::new));
      try {
        container.start();
      } catch (RuntimeException e) {
        container.close();
        throw new IllegalStateException(
            "Docker is available but the redis:7.2 container did not start: " + e, e);
      }
      String host = container.getHost();
      int port = container.getMappedPort(6379);
      return new RedisServer(
          host,
          port,
          password,
          false,
          Source.CONTAINER,
          "redis " + host + ":" + port + " (container " + container.getContainerId() + ")",
          null,
          container,
          DEFAULT_START_TIMEOUT);
    }
  }
}
