package io.redlock.benchmarks;

import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServer;
import io.redlock.testservers.RedisServers;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The servers every benchmark of a run shares: five Redis and five PostgreSQL servers on loopback.
 *
 * <p>{@link RunAll} starts them once and hands their addresses to every forked benchmark JVM as
 * system properties ({@value #REDIS_PROPERTY}, {@value #POSTGRES_PROPERTY}). A benchmark run on its
 * own (plain {@code java -jar benchmarks.jar ...}) without those properties starts its own servers
 * in its fork and stops them when the fork exits.
 */
public final class BenchServers implements AutoCloseable {
  /** Comma-separated {@code host:port} of the Redis servers. */
  public static final String REDIS_PROPERTY = "redlock.bench.redis";

  /** Comma-separated JDBC URLs (user and password in the query) of the PostgreSQL servers. */
  public static final String POSTGRES_PROPERTY = "redlock.bench.postgres";

  /** How many servers of each kind a run uses. */
  public static final int COUNT = 5;

  private static BenchServers shared;

  private final List<String> redis;
  private final List<String> postgres;
  private final List<AutoCloseable> started;

  private BenchServers(List<String> redis, List<String> postgres, List<AutoCloseable> started) {
    this.redis = List.copyOf(redis);
    this.postgres = List.copyOf(postgres);
    this.started = started;
  }

  /** Starts five Redis and five PostgreSQL servers; {@link #close()} stops them. */
  public static BenchServers start() {
    List<AutoCloseable> started = new ArrayList<>();
    try {
      RedisServers redisServers = RedisServers.start(COUNT);
      started.add(redisServers);
      List<String> redis = new ArrayList<>();
      for (RedisServer server : redisServers) {
        redis.add(server.address());
      }
      List<String> postgres = new ArrayList<>();
      for (int i = 0; i < COUNT; i++) {
        PostgresServer server = PostgresServer.start();
        started.add(server);
        postgres.add(server.jdbcUrl());
      }
      return new BenchServers(redis, postgres, started);
    } catch (RuntimeException | Error e) {
      closeAll(started);
      throw e;
    }
  }

  /**
   * The servers of this JVM: those named by the system properties, else servers started now (once
   * per JVM) and stopped at exit.
   */
  public static synchronized BenchServers get() {
    if (shared == null) {
      String redis = System.getProperty(REDIS_PROPERTY);
      String postgres = System.getProperty(POSTGRES_PROPERTY);
      if (redis != null && postgres != null) {
        shared = new BenchServers(split(redis), split(postgres), List.of());
      } else {
        BenchServers own = start();
        Runtime.getRuntime().addShutdownHook(new Thread(own::close, "bench-servers-stop"));
        shared = own;
      }
      if (shared.redis.size() < COUNT || shared.postgres.size() < COUNT) {
        throw new IllegalStateException(
            "the benchmarks need "
                + COUNT
                + " Redis and "
                + COUNT
                + " PostgreSQL servers; -D"
                + REDIS_PROPERTY
                + " and -D"
                + POSTGRES_PROPERTY
                + " name "
                + shared.redis.size()
                + " and "
                + shared.postgres.size());
      }
    }
    return shared;
  }

  private static List<String> split(String value) {
    return Arrays.stream(value.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList();
  }

  /** Redis addresses, {@code host:port}. */
  public List<String> redis() {
    return redis;
  }

  /** PostgreSQL JDBC URLs with user and password. */
  public List<String> postgres() {
    return postgres;
  }

  /** The system properties that hand these servers to another JVM. */
  public List<String> asJvmArgs() {
    return List.of(
        "-D" + REDIS_PROPERTY + "=" + String.join(",", redis),
        "-D" + POSTGRES_PROPERTY + "=" + String.join(",", postgres));
  }

  /**
   * A server's JDBC URL ({@code jdbc:postgresql://host:port/db?user=..&password=..}) in libpq's
   * form, for {@code redlock-backend-postgres} and Vert.x's client: {@code
   * postgresql://user:password@host:port/db?sslmode=disable} (the servers have no TLS).
   */
  static String libpqUri(String jdbcUrl) {
    URI u = URI.create(jdbcUrl.startsWith("jdbc:") ? jdbcUrl.substring("jdbc:".length()) : jdbcUrl);
    String user = null;
    String password = null;
    for (String pair : u.getRawQuery() == null ? new String[0] : u.getRawQuery().split("&")) {
      if (pair.startsWith("user=")) {
        user = pair.substring("user=".length());
      } else if (pair.startsWith("password=")) {
        password = pair.substring("password=".length());
      }
    }
    String userInfo = user == null ? "" : user + (password == null ? "" : ":" + password) + "@";
    return "postgresql://"
        + userInfo
        + u.getHost()
        + ":"
        + u.getPort()
        + u.getRawPath()
        + "?sslmode=disable";
  }

  /** Host part of a Redis address. */
  static String host(String address) {
    return address.substring(0, address.lastIndexOf(':'));
  }

  /** Port part of a Redis address. */
  static int port(String address) {
    return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
  }

  @Override
  public void close() {
    closeAll(started);
  }

  private static void closeAll(List<AutoCloseable> servers) {
    for (AutoCloseable server : servers) {
      try {
        server.close();
      } catch (Exception e) {
        System.err.println("could not stop " + server + ": " + e);
      }
    }
  }
}
