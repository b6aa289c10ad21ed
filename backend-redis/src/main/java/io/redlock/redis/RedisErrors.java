package io.redlock.redis;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.security.cert.CertificateException;
import java.time.Duration;
import java.util.Locale;
import java.util.NoSuchElementException;
import javax.net.ssl.SSLException;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisBusyException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Translates Jedis and socket failures into the library's exceptions at the backend boundary:
 * transient when a retry may help, non-transient when the configuration must change. Every message
 * names the node (never its password) and says what to do.
 */
final class RedisErrors {
  private final RedisLockNode.Builder settings;
  private final String node;

  RedisErrors(RedisLockNode.Builder settings, String node) {
    this.settings = settings;
    this.node = node;
  }

  /** Translates {@code failure} of {@code operation} (e.g. "SET NX PX"). */
  RedlockException translate(Throwable failure, String operation) {
    if (failure instanceof RedlockException redlock) {
      return redlock;
    }
    if (failure.getClass() == JedisException.class && failure.getCause() != null) {
      failure = failure.getCause(); // the pool's "Could not get a resource from the pool"
    }
    String detail = scrub(describe(failure));
    String lower = detail.toLowerCase(Locale.ROOT);
    String problem = "(" + detail + ")";
    Throwable tls = find(failure, SSLException.class, CertificateException.class);
    if (tls != null) {
      return fail(
          false,
          failure,
          "TLS handshake failed (%s); check that the server's certificate is trusted"
              + " (javax.net.ssl.trustStore or sslSocketFactory), that it names the host (or set"
              + " verifyHostname=false), and that the port speaks TLS",
          scrub(String.valueOf(tls.getMessage())));
    }
    if (failure instanceof NoSuchElementException) {
      return fail(
          true,
          failure,
          "all %d pooled connections stayed busy for %d ms; raise poolSize or connectTimeout, or"
              + " check that the node is not stalled",
          settings.poolSize,
          settings.connectTimeout.toMillis());
    }
    if (startsWith(detail, "NOAUTH")) {
      return fail(
          false,
          failure,
          "the server requires a password %s; give it in the node URI:"
              + " redis://:password@host:port",
          problem);
    }
    if (startsWith(detail, "NOPERM")) {
      return fail(
          false,
          failure,
          "the ACL user may not run %s %s; grant it e.g. ACL SETUSER <user> +set +get +del"
              + " +pexpire +eval +evalsha ~<keyPrefix>*",
          operation,
          problem);
    }
    if (failure instanceof JedisAccessControlException || startsWith(detail, "WRONGPASS")) {
      return fail(
          false,
          failure,
          "authentication failed %s; check the user and password in the node URI"
              + " (redis://user:password@host:port, password percent-encoded)",
          problem);
    }
    if (lower.contains("auth") && lower.contains("without any password configured")) {
      return fail(
          false,
          failure,
          "a password was given but the server has none configured %s; remove the password"
              + " from the node URI or set requirepass on the server",
          problem);
    }
    if (lower.contains("db index is out of range") || lower.contains("invalid db index")) {
      return fail(
          false,
          failure,
          "database %d does not exist on this server %s; use an index below the server's"
              + " 'databases' setting (16 by default)",
          settings.database,
          problem);
    }
    if (startsWith(detail, "READONLY")) {
      return fail(
          false,
          failure,
          "the node is a read-only replica %s; point the node URI at a primary: locks must be"
              + " written",
          problem);
    }
    if (startsWith(detail, "MOVED", "ASK", "CLUSTERDOWN", "CROSSSLOT")) {
      return fail(
          false,
          failure,
          "the node is part of a Redis Cluster %s; Redlock needs independent nodes: use"
              + " standalone servers (or one URI per independent primary)",
          problem);
    }
    if (lower.contains("wrongtype")) {
      return fail(
          false,
          failure,
          "the lock key holds a value of another type %s; another application uses this key"
              + " name: set a keyPrefix",
          problem);
    }
    if (lower.startsWith("err unknown command")) {
      return fail(
          false,
          failure,
          "%s is not available on this server %s; Redlock needs SET with NX/PX and Lua scripting"
              + " (EVAL/EVALSHA), Redis 2.6.12 or later with those commands enabled",
          operation,
          problem);
    }
    if (failure instanceof JedisBusyException || startsWith(detail, "BUSY")) {
      return fail(true, failure, "the server is busy running a script %s; retry later", problem);
    }
    if (startsWith(detail, "LOADING")) {
      return fail(true, failure, "the server is loading its data set %s; retry soon", problem);
    }
    if (startsWith(detail, "OOM")) {
      return fail(
          true,
          failure,
          "the server is out of memory %s; raise maxmemory and keep maxmemory-policy"
              + " noeviction: an eviction policy would delete live lock keys and break mutual"
              + " exclusion",
          problem);
    }
    if (startsWith(detail, "MASTERDOWN", "TRYAGAIN", "NOREPLICAS")) {
      return fail(true, failure, "the server cannot serve writes now %s", problem);
    }
    if (find(failure, ConnectException.class) != null) {
      return fail(
          true,
          failure,
          "connection refused; check that Redis is running and listening on %s:%d",
          settings.host,
          settings.port);
    }
    if (find(failure, UnknownHostException.class) != null) {
      return fail(true, failure, "unknown host '%s'; check the host name and DNS", settings.host);
    }
    if (find(failure, NoRouteToHostException.class) != null) {
      return fail(true, failure, "no route to %s; check the network and firewall", settings.host);
    }
    if (find(failure, SocketTimeoutException.class) != null) {
      return fail(
          true,
          failure,
          "timed out talking to the node %s; check that it is up and reachable, or raise"
              + " connectTimeout/socketTimeout",
          problem);
    }
    if (failure instanceof JedisConnectionException) {
      return fail(
          true,
          failure,
          "the connection failed %s; check that the node is up (a restarted node drops its"
              + " connections)",
          problem);
    }
    if (failure instanceof JedisDataException) {
      return fail(true, failure, "the server refused %s %s", operation, problem);
    }
    return fail(
        true,
        failure,
        "%s failed unexpectedly (%s: %s)",
        operation,
        failure.getClass().getName(),
        detail);
  }

  /** Why a call that waited {@code waited} for a pooled connection got none. */
  String poolBusy(Duration waited) {
    return "no connection came free within "
        + waited.toMillis()
        + " ms: all "
        + settings.poolSize
        + " were busy with calls the node had not answered, or connecting took longer; check"
        + " that the node is not stalled, or raise poolSize if the load needs more";
  }

  private RedlockException fail(boolean retry, Throwable cause, String message, Object... args) {
    String text = String.format(message, args);
    // Jedis messages do not carry the password; if one ever did, attach a scrubbed copy instead.
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (settings.password != null && String.valueOf(t.getMessage()).contains(settings.password)) {
        RuntimeException copy =
            new RuntimeException(t.getClass().getName() + ": " + scrub(t.getMessage()));
        copy.setStackTrace(t.getStackTrace());
        cause = copy;
        break;
      }
    }
    return retry
        ? new RedlockTransientException(node, text, cause)
        : new RedlockNonTransientException(node, text, cause);
  }

  /** Removes the password from a text, should a server or driver ever echo it. */
  String scrub(String text) {
    if (text == null) {
      return "";
    }
    return settings.password == null ? text : text.replace(settings.password, "***");
  }

  private static String describe(Throwable failure) {
    // Jedis wraps the interesting message (e.g. WRONGPASS) in a connection exception at times.
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof JedisDataException && t.getMessage() != null) {
        return t.getMessage();
      }
    }
    return failure.getMessage() == null ? failure.getClass().getSimpleName() : failure.getMessage();
  }

  private static boolean startsWith(String text, String... prefixes) {
    for (String prefix : prefixes) {
      if (text.startsWith(prefix + " ") || text.equals(prefix)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The first of {@code types} among the causes of {@code failure} and their suppressed exceptions
   * (Jedis reports each address it tried as a suppressed exception of "Failed to connect").
   */
  @SafeVarargs
  private static Throwable find(Throwable failure, Class<? extends Throwable>... types) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      for (Class<? extends Throwable> type : types) {
        if (type.isInstance(t)) {
          return t;
        }
      }
      for (Throwable suppressed : t.getSuppressed()) {
        Throwable hit = find(suppressed, types);
        if (hit != null) {
          return hit;
        }
      }
    }
    return null;
  }
}
