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
 * The incarnation of the Redis server behind one node, so that {@link RedisLockNode#status()} can
 * answer from memory yet never describe a server from before a restart. A restart breaks every
 * connection, so once somebody asked for the status ({@link #watch()}) every new connection reads
 * {@code INFO} and {@code CONFIG GET appendfsync} before it carries a command; a replaced
 * incarnation seen late is ignored. The uptime, extrapolated on the monotonic clock, loses a second
 * so as never to overstate. Durable means AOF with {@code appendfsync always}. Thread-safe.
 */
final class RedisIncarnation {
  private static final CommandArguments INFO = new CommandArguments(Protocol.Command.INFO);
  private static final CommandArguments APPENDFSYNC =
      new CommandArguments(Protocol.Command.CONFIG).addObjects("GET", "appendfsync");
  private static final String WHAT = "INFO (for the node's status)";

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

  /** The last incarnations replaced (restarts are rare); guarded by this. */
  private final ArrayDeque<String> retired = new ArrayDeque<>();

  RedisIncarnation(RedisLockNode node) {
    this.node = node;
  }

  /** From now on every new connection records the incarnation it sees. */
  void watch() {
    watching = true;
  }

  /** The latest observation, or null if none was made yet. */
  Observation latest() {
    return latest;
  }

  /** Asks the server on a pooled connection: nothing seen yet, or the last look failed. */
  Reply<NodeStatus> ask() {
    return Replies.supplyAsync(
        () -> {
          Connection c;
          Observation seen;
          try {
            c = node.pool.getResource();
          } catch (RuntimeException e) {
            throw node.errors.translate(e, WHAT);
          }
          try {
            seen = observe(c);
            c.close();
          } catch (RuntimeException e) {
            RedisLockNode.discard(c);
            throw node.errors.translate(e, WHAT);
          }
          if (seen.problem() != null) {
            throw seen.problem();
          }
          return seen.toStatus();
        },
        node.background,
        node.name());
  }

  /** Every new connection's hook; a refused INFO is recorded, the connection stays usable. */
  void connected(Connection connection) {
    if (watching) {
      observe(connection);
    }
  }

  /** Reads {@code INFO} and the fsync policy (one round trip) and records what it saw. */
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
      infoFailure = node.errors.translate(e, WHAT);
    }
    String appendfsync = null; // CONFIG is often not permitted (managed Redis, ACLs): unknown
    try {
      if (connection.getOne() instanceof List<?> l
          && l.size() >= 2
          && l.get(1) instanceof byte[] v) {
        appendfsync = new String(v, StandardCharsets.UTF_8);
      }
    } catch (JedisDataException e) {
      // unknown, as above
    }
    long readAt = System.nanoTime();
    Observation seen =
        infoFailure != null
            ? new Observation(null, readAt, false, Map.of(), infoFailure)
            : parse((byte[]) info, appendfsync, readAt);
    record(seen);
    return seen;
  }

  private static Observation parse(byte[] reply, String appendfsync, long readAt) {
    Map<String, String> info = new HashMap<>();
    for (String line : new String(reply, StandardCharsets.UTF_8).split("\r\n")) {
      int colon = line.indexOf(':');
      if (colon > 0 && !line.startsWith("#")) {
        info.put(line.substring(0, colon), line.substring(colon + 1));
      }
    }
    String runId = info.get("run_id");
    long upNanos;
    try {
      long up = Long.parseLong(info.get("uptime_in_seconds").trim());
      upNanos = Math.multiplyExact(Math.max(0, up - 1), 1_000_000_000L);
    } catch (RuntimeException e) {
      throw new IllegalStateException("INFO gave no readable uptime_in_seconds", e);
    }
    if (runId == null || runId.isEmpty()) {
      throw new IllegalStateException("INFO gave no run_id; is this a Redis server?");
    }
    Map<String, String> details = new HashMap<>();
    for (String name : List.of("redis_version", "role", "aof_enabled", "maxmemory_policy")) {
      if (info.get(name) != null) {
        details.put(name, info.get(name));
      }
    }
    details.put(
        "appendfsync",
        appendfsync != null ? appendfsync : "unknown (CONFIG GET appendfsync not permitted)");
    boolean durable = "1".equals(info.get("aof_enabled")) && "always".equals(appendfsync);
    return new Observation(runId, readAt - upNanos, durable, Map.copyOf(details), null);
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
        // the same server: keep the later (safer) estimate of its start
        long started = Math.max(current.startedAtNanos() - seen.startedAtNanos(), 0);
        seen =
            new Observation(
                seen.incarnation(),
                seen.startedAtNanos() + started,
                seen.durable(),
                seen.details(),
                null);
      } else {
        retired.addLast(current.incarnation());
        if (retired.size() > 16) {
          retired.removeFirst();
        }
      }
    }
    latest = seen;
  }
}
