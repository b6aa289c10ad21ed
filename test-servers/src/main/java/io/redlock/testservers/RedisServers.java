package io.redlock.testservers;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * A group of independent Redis servers, e.g. the five nodes of a Redlock quorum. Obtained like
 * {@link RedisServer}: with the default options and {@value RedisServer#ENVIRONMENT} set, the first
 * {@code n} addresses given there (too few is an error); otherwise containers or local processes.
 * Closing the group stops every server it started.
 *
 * <pre>{@code
 * try (RedisServers redis = RedisServers.start(5, RedisServer.builder().faultInjection())) {
 *   redis.get(0).kill();
 *   List<String> uris = redis.uris();
 * }
 * }</pre>
 */
public final class RedisServers implements AutoCloseable, Iterable<RedisServer> {
  private final List<RedisServer> servers;

  private RedisServers(List<RedisServer> servers) {
    this.servers = List.copyOf(servers);
  }

  /** {@code n} servers with the default options. */
  public static RedisServers start(int n) {
    return start(n, RedisServer.builder());
  }

  /**
   * {@code n} servers, each started from {@code options}.
   *
   * @throws IllegalStateException if they cannot all be had; servers already started are stopped
   */
  public static RedisServers start(int n, RedisServer.Builder options) {
    if (n < 1) {
      throw new IllegalArgumentException("need at least one server, got " + n);
    }
    List<RedisServer> started = new ArrayList<>();
    try {
      List<String> external = options.plain() ? RedisServer.externalAddresses() : List.of();
      if (!external.isEmpty()) {
        if (external.size() < n) {
          throw new IllegalStateException(
              RedisServer.ENVIRONMENT
                  + " lists "
                  + external.size()
                  + " Redis server(s) but this test needs "
                  + n
                  + " independent ones; list at least "
                  + n
                  + " comma-separated host:port addresses, or unset it to start local servers");
        }
        for (int i = 0; i < n; i++) {
          started.add(RedisServer.external(external.get(i)));
        }
      } else {
        for (int i = 0; i < n; i++) {
          started.add(options.start());
        }
      }
      return new RedisServers(started);
    } catch (RuntimeException | Error e) {
      started.forEach(RedisServer::close);
      throw e;
    }
  }

  /** The i-th server (0-based). */
  public RedisServer get(int index) {
    return servers.get(index);
  }

  /** How many servers the group has. */
  public int size() {
    return servers.size();
  }

  /** The servers, in order. */
  public List<RedisServer> list() {
    return servers;
  }

  /** Every server's {@link RedisServer#uri()}, in order (with passwords: do not log). */
  public List<String> uris() {
    return servers.stream().map(RedisServer::uri).toList();
  }

  @Override
  public Iterator<RedisServer> iterator() {
    return servers.iterator();
  }

  /** Stops every server this group started. Idempotent. */
  @Override
  public void close() {
    RuntimeException first = null;
    for (RedisServer server : servers) {
      try {
        server.close();
      } catch (RuntimeException e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  @Override
  public String toString() {
    return servers.toString();
  }
}
