package io.redlock.cli.internal;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * The channel between {@code redlock exec} and the redlock commands its command runs ({@code
 * extend}, {@code release}, {@code status}, {@code unlock}, a nested {@code exec}).
 *
 * <p>exec listens on a Unix domain socket in a directory of its own that only its user may enter
 * (0700), and names the socket in {@value #ENV}. A nested command asks exec over it, showing the
 * lease's token ({@code REDLOCK_TOKEN}) as its credential: for exec's own lease, exec extends or
 * releases it itself, so that its renewal goes on with the TTL the command asked for; for anything
 * else, exec hands over the nodes it uses (URIs with their credentials, node timeout, drift
 * factor), which then never appear in the command's environment or in {@code ps}. A nested command
 * that cannot reach its exec refuses to run rather than use other nodes.
 *
 * <p>The protocol: the client sends {@code key=value} lines and shuts its output; exec answers with
 * {@code key=value} lines and closes.
 */
final class ParentExec implements AutoCloseable {
  /** The environment variable that names exec's socket, for the command it runs. */
  static final String ENV = "REDLOCK_EXEC_SOCKET";

  /** Requests and replies larger than this are refused: the channel carries a few lines. */
  private static final int MAX_BYTES = 1 << 16;

  private final Path dir;
  private final Path socket;
  private final ServerSocketChannel server;

  private ParentExec(Path dir, Path socket, ServerSocketChannel server) {
    this.dir = dir;
    this.socket = socket;
    this.server = server;
  }

  /**
   * Listens on a fresh socket in a private directory under {@code $XDG_RUNTIME_DIR} (else the
   * temporary directory), answering each request with {@code handler} on a daemon thread.
   */
  static ParentExec listen(Function<Map<String, String>, Map<String, List<String>>> handler)
      throws IOException {
    String runtime = System.getenv("XDG_RUNTIME_DIR");
    Path base =
        runtime != null && !runtime.isBlank() && Files.isDirectory(Path.of(runtime))
            ? Path.of(runtime)
            : Path.of(System.getProperty("java.io.tmpdir"));
    removeStale(base);
    Path dir =
        Files.createTempDirectory(
            base,
            "redlock-exec-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Path socket = dir.resolve("socket");
    ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    try {
      server.bind(UnixDomainSocketAddress.of(socket));
    } catch (IOException e) {
      server.close();
      Files.deleteIfExists(dir);
      throw e;
    }
    ParentExec p = new ParentExec(dir, socket, server);
    Thread t = new Thread(() -> p.serve(handler), "redlock-exec-channel");
    t.setDaemon(true);
    t.start();
    return p;
  }

  /**
   * Deletes the socket directories of execs that ended without closing them (killed with SIGKILL):
   * those of this user, older than a minute, whose socket nobody listens on any more.
   */
  private static void removeStale(Path base) {
    try (var dirs = Files.newDirectoryStream(base, "redlock-exec-*")) {
      long minute = System.currentTimeMillis() - 60_000;
      for (Path d : dirs) {
        Path s = d.resolve("socket");
        if (!olderThan(d, minute)) {
          continue; // perhaps an exec that is starting: its socket comes in a moment
        }
        try (SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX)) {
          c.connect(UnixDomainSocketAddress.of(s));
        } catch (java.net.ConnectException | java.nio.file.NoSuchFileException gone) {
          try {
            Files.deleteIfExists(s);
            Files.deleteIfExists(d);
          } catch (IOException e) {
            // not ours, or not empty: left alone
          }
        } catch (IOException | RuntimeException e) {
          // another user's, or in use: left alone
        }
      }
    } catch (IOException | RuntimeException e) {
      // nothing to tidy
    }
  }

  private static boolean olderThan(Path p, long millis) {
    try {
      return Files.getLastModifiedTime(p).toMillis() < millis;
    } catch (IOException e) {
      return false;
    }
  }

  Path socket() {
    return socket;
  }

  private void serve(Function<Map<String, String>, Map<String, List<String>>> handler) {
    while (server.isOpen()) {
      SocketChannel c;
      try {
        c = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      Thread t =
          new Thread(
              () -> {
                try (c) {
                  Map<String, String> request = JSON.readValue(readAll(c), REQUEST);
                  write(c, handler.apply(request));
                } catch (IOException | RuntimeException e) {
                  // the client gone, or a malformed request: it sees the connection end
                }
              },
              "redlock-exec-request");
      t.setDaemon(true);
      t.start();
    }
  }

  @Override
  public void close() {
    try {
      server.close();
      Files.deleteIfExists(socket);
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      // a temporary directory left behind
    }
  }

  /** exec's answer: {@code key -> values}, in order. */
  record Answer(Map<String, List<String>> fields) {
    Optional<String> get(String key) {
      List<String> v = fields.get(key);
      return v == null || v.isEmpty() ? Optional.empty() : Optional.of(v.get(0));
    }

    List<String> all(String key) {
      return fields.getOrDefault(key, List.of());
    }
  }

  /** The socket named by {@value #ENV}, if the environment names one. */
  static Optional<Path> socket(Map<String, String> env) {
    String s = env.get(ENV);
    return s == null || s.isBlank() ? Optional.empty() : Optional.of(Path.of(s));
  }

  /**
   * Sends {@code request} to the exec at {@code socket}; a usage error naming the socket if that
   * exec cannot be reached (exit 69): a nested command never falls back to other nodes.
   */
  static Answer ask(Path socket, Map<String, String> request) {
    // exec answers within a node timeout or two; a stopped (SIGSTOP) exec must not hang us
    CompletableFuture<Answer> answer = CompletableFuture.supplyAsync(() -> askNow(socket, request));
    try {
      return answer.get(ASK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new CliException(
          ExitCodes.UNREACHABLE,
          unreachable(socket, "no answer within " + Durations.human(ASK_TIMEOUT)));
    } catch (ExecutionException e) {
      if (e.getCause() instanceof CliException cli) {
        throw cli;
      }
      throw new CliException(ExitCodes.UNREACHABLE, unreachable(socket, e.getCause().toString()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CliException(ExitCodes.UNREACHABLE, unreachable(socket, "interrupted"));
    }
  }

  /** The longest a nested command waits for its exec's answer. */
  static final Duration ASK_TIMEOUT = Duration.ofSeconds(30);

  private static Answer askNow(Path socket, Map<String, String> request) {
    try (SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      c.connect(UnixDomainSocketAddress.of(socket));
      write(c, request);
      c.shutdownOutput();
      Answer a = new Answer(JSON.readValue(readAll(c), ANSWER));
      if (a.fields().isEmpty()) {
        throw new IOException("no answer");
      }
      a.get("refused")
          .ifPresent(
              why -> {
                throw new CliException(ExitCodes.USAGE, unreachable(socket, why));
              });
      return a;
    } catch (IOException e) {
      throw new CliException(ExitCodes.UNREACHABLE, unreachable(socket, e.toString()));
    }
  }

  private static String unreachable(Path socket, String why) {
    return "this runs inside 'redlock exec' ("
        + ENV
        + "="
        + socket
        + "), but that exec did not answer ("
        + why
        + "); refusing to use other nodes than its own. Run it while exec runs, or name the"
        + " nodes yourself with --nodes or --config";
  }

  /**
   * The nodes of the exec this command runs under, when {@value #ENV} names one and the command
   * names no nodes itself (--nodes, --config); empty otherwise.
   */
  static Optional<NodeOptions.Selection> nodes(NodeOptions options, Map<String, String> env) {
    Optional<Path> socket = socket(env);
    if (socket.isEmpty()
        || (options.nodes != null && !options.nodes.isEmpty())
        || options.config != null) {
      return Optional.empty();
    }
    Map<String, String> request = new LinkedHashMap<>();
    request.put("auth", String.valueOf(env.get("REDLOCK_TOKEN")));
    request.put("op", "nodes");
    Answer a = ask(socket.get(), request);
    List<String> uris = a.all("node");
    if (uris.isEmpty()) {
      throw new CliException(ExitCodes.UNREACHABLE, unreachable(socket.get(), "it named no nodes"));
    }
    Duration timeout =
        a.get("node-timeout-ms").map(ms -> Duration.ofMillis(Long.parseLong(ms))).orElse(null);
    Double drift = a.get("drift-factor").map(Double::valueOf).orElse(null);
    return Optional.of(
        new NodeOptions.Selection(
            List.copyOf(uris),
            "the parent 'redlock exec' (" + a.get("source").orElse("?") + ")",
            Boolean.parseBoolean(a.get("zero-setup").orElse("false")),
            timeout,
            drift));
  }

  /**
   * For {@code extend} and {@code release} of the lease exec holds (its LOCKNAME and token): asks
   * exec to do it, prints exec's lines on {@code err} and returns the exit code; empty when this is
   * not exec's lease or no exec is around.
   */
  static Optional<Integer> ownLease(
      String op, String lockName, String token, Duration ttl, PrintStream err) {
    Map<String, String> env = System.getenv();
    Optional<Path> socket = socket(env);
    if (socket.isEmpty()
        || !lockName.equals(env.get("REDLOCK_LOCK_NAME"))
        || !token.equals(env.get("REDLOCK_TOKEN"))) {
      return Optional.empty();
    }
    Map<String, String> request = new LinkedHashMap<>();
    request.put("auth", token);
    request.put("op", op);
    request.put("name", lockName);
    if (ttl != null) {
      request.put("ttl-ms", Long.toString(ttl.toMillis()));
    }
    Answer a = ask(socket.get(), request);
    if (a.get("exit").isEmpty()) {
      return Optional.empty(); // not exec's lease after all
    }
    a.all("err").forEach(err::println);
    err.flush();
    return Optional.of(Integer.valueOf(a.get("exit").get()));
  }

  /** One JSON object each way, the request then the answer. */
  private static final ObjectMapper JSON = new ObjectMapper();

  private static final TypeReference<Map<String, String>> REQUEST = new TypeReference<>() {};

  private static final TypeReference<Map<String, List<String>>> ANSWER = new TypeReference<>() {};

  private static byte[] readAll(SocketChannel c) throws IOException {
    byte[] bytes = Channels.newInputStream(c).readNBytes(MAX_BYTES + 1);
    if (bytes.length > MAX_BYTES) {
      throw new IOException("too long");
    }
    return bytes;
  }

  private static void write(SocketChannel c, Object message) throws IOException {
    Channels.newOutputStream(c).write(JSON.writeValueAsBytes(message));
  }
}
