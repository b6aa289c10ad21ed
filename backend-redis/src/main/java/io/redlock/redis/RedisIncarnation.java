package io.redlock.redis;

import io.redlock.RedlockException;
import io.redlock.spi.NodeStatus;
import io.redlock.spi.Reply;
import io.redlock.spi.support.Replies;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * The incarnation of the Redis server behind one node, kept current cheaply so that {@link
 * RedisLockNode#status()} can answer from memory and still never describe a server from before a
 * restart once the restarted one has answered.
 *
 * <p>The argument: a restart breaks every connection, so a reply read on a connection comes from
 * the incarnation that was running when the connection was opened. Once somebody asked for the
 * status ({@link #watch()}), every new connection reads {@code INFO} and {@code CONFIG GET
 * appendfsync} as soon as it is set up, before it carries any command, and records what it saw
 * here. So when a reply has been awaited, the incarnation that produced it, or a later one, is
 * recorded already. Connections opened before watching began were opened before the first
 * observation, so their server is the observed one or an older one (whose connections are broken).
 * An incarnation that was replaced never comes back: a late observation of it (read on a connection
 * opened just before the restart) is ignored. The residual gap: the very first observations of a
 * node racing a crash of its server. It needs a direct connection: a proxy that keeps client
 * connections open across server restarts would hide restarts.
 *
 * <p>The uptime is extrapolated from the observation with this JVM's monotonic clock and never
 * overstates: Redis computes {@code uptime_in_seconds} as the difference of two whole-second clock
 * readings, up to a second more than the truth, so a second is taken off; and the reply is read
 * after the server wrote it. Durable means {@code aof_enabled:1} with {@code appendfsync always};
 * if {@code CONFIG GET} is not permitted the fsync policy is unknown and the node counts as not
 * durable.
 *
 * <p>Thread-safe.
 */
final class RedisIncarnation {
  /** How many replaced incarnations are remembered (restarts are rare). */
  private static final int RETIRED = 16;

  private static final CommandArguments INFO = new CommandArguments(Protocol.Command.INFO);
  private static final CommandArguments APPENDFSYNC =
      new CommandArguments(Protocol.Command.CONFIG).addObjects("GET", "appendfsync");

  /** What one connection saw, or why it could not see it. */
  record Observation(
      String incarnation,
      long startedAtNanos,
      boolean durable,
      Map<String, String> details,
      RedlockException problem) {

    NodeStatus toStatus() {
      long up = System.nanoTime() - startedAtNanos;
      return new NodeStatus(incarnation, Duration.ofNanos(Math.max(0, up)), durable, details);
    }
  }

  private final RedisLockNode node;
  private volatile boolean watching;
  private volatile Observation latest;

  // guarded by this
  private final ArrayDeque<String> retired = new ArrayDeque<>();

  RedisIncarnation(RedisLockNode node) {
    this.node = node;
  }

  /** From now on every new connection records the incarnation it sees. */
  void watch() {
    watching = true;
  }

  /**
   * Asks the server on a pooled connection: nothing was seen yet, or the last look failed (NOPERM,
   * BUSY...), and a busy pool may not open a new connection for a long time.
   */
  Reply<NodeStatus> ask() {
    return Replies.supplyAsync(
        () -> {
          String what = "INFO (for the node's status)";
          Connection c;
          try {
            c = node.pool.getResource();
          } catch (RuntimeException e) {
            throw node.errors.translate(e, what);
          }
          Observation seen;
          try {
            seen = observe(c);
            c.close();
          } catch (RuntimeException e) {
            RedisLockNode.discard(c);
            throw node.errors.translate(e, what);
          }
          if (seen.problem() != null) {
            throw seen.problem();
          }
          return seen.toStatus();
        },
        node.background,
        node.name());
  }

  /** The latest observation, or null if none was made yet. */
  Observation latest() {
    return latest;
  }

  /**
   * The hook of every new connection: records its server's incarnation if somebody watches.
   * Connection failures propagate (the connection is unusable); a refused {@code INFO} is recorded
   * as the node's status problem, and the connection stays usable for locks.
   */
  void connected(Connection connection) {
    if (watching) {
      observe(connection);
    }
  }

  /**
   * Reads {@code INFO} and the fsync policy on {@code connection} (one round trip, blocking up to
   * the socket timeout) and records the result.
   */
  Observation observe(Connection connection) {
    connection.setSoTimeout(node.socketTimeoutMillis); // a pooled one may carry a short one
    connection.sendCommand(INFO);
    connection.sendCommand(APPENDFSYNC);
    Object info;
    RedlockException infoFailure = null;
    try {
      info = connection.getOne();
    } catch (JedisDataException e) {
      info = null;
      infoFailure = node.errors.translate(e, "INFO (for the node's status)");
    }
    String appendfsync;
    try {
      appendfsync = appendfsync(connection.getOne());
    } catch (JedisDataException e) {
      appendfsync = null; // CONFIG is often not permitted (managed Redis, ACLs): unknown
    }
    long readAt = System.nanoTime();
    Observation seen =
        infoFailure != null
            ? new Observation(null, readAt, false, Map.of(), infoFailure)
            : parse(info, appendfsync, readAt);
    record(seen);
    return seen;
  }

  private Observation parse(Object reply, String appendfsync, long readAt) {
    if (!(reply instanceof byte[] bytes)) {
      throw new IllegalStateException("unexpected reply to INFO: " + reply);
    }
    Map<String, String> info = new HashMap<>();
    for (String line : new String(bytes, StandardCharsets.UTF_8).split("\r\n")) {
      int colon = line.indexOf(':');
      if (colon > 0 && !line.startsWith("#")) {
        info.put(line.substring(0, colon), line.substring(colon + 1));
      }
    }
    String runId = info.get("run_id");
    String uptime = info.get("uptime_in_seconds");
    if (runId == null || runId.isEmpty() || uptime == null) {
      throw new IllegalStateException(
          "INFO gave no run_id or uptime_in_seconds; is this a Redis server?");
    }
    long upNanos;
    try {
      upNanos = Math.multiplyExact(Math.max(0, Long.parseLong(uptime.trim()) - 1), 1_000_000_000L);
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalStateException("INFO gave an unreadable uptime_in_seconds: " + uptime, e);
    }
    boolean aof = "1".equals(info.get("aof_enabled"));
    boolean durable = aof && "always".equals(appendfsync);
    Map<String, String> details = new HashMap<>();
    putIfPresent(details, "redis_version", info.get("redis_version"));
    putIfPresent(details, "role", info.get("role"));
    putIfPresent(details, "aof_enabled", info.get("aof_enabled"));
    details.put(
        "appendfsync",
        appendfsync != null ? appendfsync : "unknown (CONFIG GET appendfsync not permitted)");
    putIfPresent(details, "maxmemory_policy", info.get("maxmemory_policy"));
    return new Observation(runId, readAt - upNanos, durable, Map.copyOf(details), null);
  }

  private static void putIfPresent(Map<String, String> map, String key, String value) {
    if (value != null) {
      map.put(key, value);
    }
  }

  private static String appendfsync(Object reply) {
    if (reply instanceof List<?> list && list.size() >= 2 && list.get(1) instanceof byte[] v) {
      return new String(v, StandardCharsets.UTF_8);
    }
    return null;
  }

  /** Keeps the observation unless it is of an incarnation that was already replaced. */
  private synchronized void record(Observation seen) {
    Observation current = latest;
    if (seen.problem() != null) {
      if (current == null || current.problem() != null) {
        latest = seen;
      }
      return;
    }
    if (retired.contains(seen.incarnation())) {
      return; // read on a connection opened just before a restart: that server is gone
    }
    if (current != null && current.incarnation() != null) {
      if (current.incarnation().equals(seen.incarnation())) {
        // The same server: keep the later (safer) estimate of its start.
        if (current.startedAtNanos() - seen.startedAtNanos() > 0) {
          seen =
              new Observation(
                  seen.incarnation(),
                  current.startedAtNanos(),
                  seen.durable(),
                  seen.details(),
                  null);
        }
      } else {
        retired.addLast(current.incarnation());
        if (retired.size() > RETIRED) {
          retired.removeFirst();
        }
      }
    }
    latest = seen;
  }
}
