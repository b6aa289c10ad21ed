package io.redlock.benchmarks;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.ThreadParams;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Protocol;

/**
 * The floor: raw Jedis doing exactly the Redlock round trips on the five Redis servers, with
 * nothing else: {@code SET key token NX PX ttl} on every node, then the algorithm's Lua
 * compare-and-delete ({@code EVALSHA}) on every node. Each benchmark thread has its own
 * connections, key and token (a fixed token: the floor skips even the token generation, so it is a
 * strict lower bound). Three ways to ask five nodes:
 *
 * <ul>
 *   <li>{@link #sequential}: one node after the other, each command waiting for its reply;
 *   <li>{@link #threadPerNode}: one worker thread per node, the caller waits for all five;
 *   <li>{@link #multiplexed}: one thread writes and flushes the command to all five sockets, then
 *       reads the five replies (the algorithm description's recommendation).
 * </ul>
 */
public class RedisFloorBenchmark {
  /** The Lua compare-and-delete of the algorithm's description, as the Redis backend sends it. */
  static final String RELEASE =
      "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1])"
          + " else return 0 end";

  static final String RELEASE_SHA = sha1(RELEASE);

  /** A connection that can write a command without reading its reply. */
  static final class FloorConnection extends Connection {
    FloorConnection(String address) {
      super(
          new HostAndPort(BenchServers.host(address), BenchServers.port(address)),
          DefaultJedisClientConfig.builder()
              .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
              .socketTimeoutMillis(2_000)
              .build());
    }

    /** Writes and flushes; the reply stays in the socket until {@link #getOne()}. */
    void send(CommandArguments command) {
      sendCommand(command);
      flush();
    }
  }

  /** Connects to each Redis server and loads the release script there. */
  static FloorConnection[] connect(List<String> addresses) {
    FloorConnection[] connections = new FloorConnection[addresses.size()];
    for (int i = 0; i < connections.length; i++) {
      connections[i] = new FloorConnection(addresses.get(i));
      connections[i].executeCommand(
          new CommandArguments(Protocol.Command.SCRIPT).add("LOAD").add(RELEASE));
    }
    return connections;
  }

  /** {@code SET key token NX PX ttl}, as the Redis backend sends it. */
  static CommandArguments acquireCommand(String key, String token) {
    return new CommandArguments(Protocol.Command.SET)
        .add(key)
        .add(token)
        .add("NX")
        .add("PX")
        .add(Workload.TTL.toMillis());
  }

  /** The compare-and-delete by its script's SHA-1. */
  static CommandArguments releaseCommand(String key, String token) {
    return new CommandArguments(Protocol.Command.EVALSHA)
        .add(RELEASE_SHA)
        .add(1)
        .add(key)
        .add(token);
  }

  /**
   * Writes {@code command} to every connection, then reads the replies: how many said "OK" (an
   * acquire) or 1 (a release).
   */
  static int multiplex(FloorConnection[] connections, CommandArguments command, boolean acquire) {
    for (FloorConnection c : connections) {
      c.send(command);
    }
    int yes = 0;
    for (FloorConnection c : connections) {
      Object reply = c.getOne();
      yes += acquire ? ok(reply) : one(reply);
    }
    return yes;
  }

  /** One thread's connections to the five nodes and its pre-built commands. */
  @State(Scope.Thread)
  public static class Nodes {
    FloorConnection[] connections;
    CommandArguments acquire;
    CommandArguments release;
    int quorum;

    @Setup(Level.Trial)
    public void open(ThreadParams thread) {
      open(thread.getThreadIndex());
    }

    /** Opens the connections of benchmark thread {@code index} (also used by {@link Floors}). */
    void open(int index) {
      connections = connect(BenchServers.get().redis());
      quorum = connections.length / 2 + 1;
      String key = "bench:floor:" + index;
      String token = "floor-token-" + index + "-" + System.nanoTime();
      acquire = acquireCommand(key, token);
      release = releaseCommand(key, token);
    }

    @TearDown(Level.Trial)
    public void close() {
      for (FloorConnection c : connections) {
        c.close();
      }
    }
  }

  /** One worker thread (and connection) per node, per benchmark thread. */
  @State(Scope.Thread)
  public static class Workers {
    ExecutorService[] workers;
    Callable<Object>[] acquire;
    Callable<Object>[] release;
    Future<?>[] pending;

    @Setup(Level.Trial)
    @SuppressWarnings({"unchecked", "rawtypes"}) // generic array creation
    public void open(Nodes nodes) {
      int n = nodes.connections.length;
      workers = new ExecutorService[n];
      acquire = new Callable[n];
      release = new Callable[n];
      pending = new Future<?>[n];
      for (int i = 0; i < n; i++) {
        workers[i] = Executors.newSingleThreadExecutor();
        FloorConnection c = nodes.connections[i];
        acquire[i] = () -> c.executeCommand(nodes.acquire);
        release[i] = () -> c.executeCommand(nodes.release);
      }
    }

    @TearDown(Level.Trial)
    public void close() {
      for (ExecutorService w : workers) {
        w.shutdownNow();
      }
    }
  }

  @Benchmark
  public int sequential(Nodes nodes, Recorder recorder) {
    long start = System.nanoTime();
    int acquired = 0;
    for (FloorConnection c : nodes.connections) {
      acquired += ok(c.executeCommand(nodes.acquire));
    }
    recorder.acquired(System.nanoTime() - start);
    int released = 0;
    for (FloorConnection c : nodes.connections) {
      released += one(c.executeCommand(nodes.release));
    }
    return check(nodes, acquired, released);
  }

  @Benchmark
  public int threadPerNode(Nodes nodes, Workers workers, Recorder recorder)
      throws InterruptedException, ExecutionException {
    long start = System.nanoTime();
    int n = nodes.connections.length;
    for (int i = 0; i < n; i++) {
      workers.pending[i] = workers.workers[i].submit(workers.acquire[i]);
    }
    int acquired = 0;
    for (int i = 0; i < n; i++) {
      acquired += ok(workers.pending[i].get());
    }
    recorder.acquired(System.nanoTime() - start);
    for (int i = 0; i < n; i++) {
      workers.pending[i] = workers.workers[i].submit(workers.release[i]);
    }
    int released = 0;
    for (int i = 0; i < n; i++) {
      released += one(workers.pending[i].get());
    }
    return check(nodes, acquired, released);
  }

  @Benchmark
  public int multiplexed(Nodes nodes, Recorder recorder) {
    long start = System.nanoTime();
    int acquired = multiplex(nodes.connections, nodes.acquire, true);
    recorder.acquired(System.nanoTime() - start);
    int released = multiplex(nodes.connections, nodes.release, false);
    return check(nodes, acquired, released);
  }

  private static int ok(Object reply) {
    return reply instanceof byte[] b && b.length == 2 && b[0] == 'O' && b[1] == 'K' ? 1 : 0;
  }

  private static int one(Object reply) {
    return reply instanceof Long n && n == 1L ? 1 : 0;
  }

  /** The floor must really lock: a cycle that did not get the quorum is a broken benchmark. */
  private static int check(Nodes nodes, int acquired, int released) {
    if (acquired < nodes.quorum || released != acquired) {
      throw new IllegalStateException(
          "floor cycle acquired " + acquired + " and released " + released + " nodes");
    }
    return acquired;
  }

  static String sha1(String script) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-1").digest(script.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
