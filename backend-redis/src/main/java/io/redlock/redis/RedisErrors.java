package io.redlock.redis;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.security.cert.CertificateException;
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
    Throwable tls = find(failure, SSLException.class, CertificateException.class);
    if (tls != null) {
      return nonTransient(
          "TLS handshake failed ("
              + scrub(String.valueOf(tls.getMessage()))
              + "); check that the server's certificate is trusted (javax.net.ssl.trustStore or"
              + " sslSocketFactory), that it names the host (or set verifyHostname=false), and"
              + " that the port speaks TLS",
          failure);
    }
    if (failure instanceof NoSuchElementException) {
      return transientFailure(
          "all "
              + settings.poolSize
              + " pooled connections stayed busy for "
              + settings.connectTimeout.toMillis()
              + " ms; raise poolSize or connectTimeout, or check that the node is not stalled",
          failure);
    }
    if (startsWithAny(detail, "NOAUTH")) {
      return nonTransient(
          "the server requires a password ("
              + detail
              + "); give it in the node URI: redis://:password@host:port",
          failure);
    }
    if (startsWithAny(detail, "NOPERM")) {
      return nonTransient(
          "the ACL user may not run "
              + operation
              + " ("
              + detail
              + "); grant it e.g. ACL SETUSER <user> +set +get +del +pexpire +eval +evalsha"
              + " ~<keyPrefix>*",
          failure);
    }
    if (failure instanceof JedisAccessControlException || startsWithAny(detail, "WRONGPASS")) {
      return nonTransient(
          "authentication failed ("
              + detail
              + "); check the user and password in the node URI"
              + " (redis://user:password@host:port, password percent-encoded)",
          failure);
    }
    String lower = detail.toLowerCase(Locale.ROOT);
    if (lower.contains("auth") && lower.contains("without any password configured")) {
      return nonTransient(
          "a password was given but the server has none configured ("
              + detail
              + "); remove the password from the node URI or set requirepass on the server",
          failure);
    }
    if (lower.contains("db index is out of range") || lower.contains("invalid db index")) {
      return nonTransient(
          "database "
              + settings.database
              + " does not exist on this server ("
              + detail
              + "); use an index below the server's 'databases' setting (16 by default)",
          failure);
    }
    if (startsWithAny(detail, "READONLY")) {
      return nonTransient(
          "the node is a read-only replica ("
              + detail
              + "); point the node URI at a primary: locks must be written",
          failure);
    }
    if (startsWithAny(detail, "MOVED", "ASK", "CLUSTERDOWN", "CROSSSLOT")) {
      return nonTransient(
          "the node is part of a Redis Cluster ("
              + detail
              + "); Redlock needs independent nodes: use standalone servers (or one URI per"
              + " independent primary)",
          failure);
    }
    if (startsWithAny(detail, "WRONGTYPE") || lower.contains("wrongtype")) {
      return nonTransient(
          "the lock key holds a value of another type ("
              + detail
              + "); another application uses this key name: set a keyPrefix",
          failure);
    }
    if (lower.startsWith("err unknown command")) {
      return nonTransient(
          operation
              + " is not available on this server ("
              + detail
              + "); Redlock needs SET with NX/PX and Lua scripting (EVAL/EVALSHA), Redis 2.6.12"
              + " or later with those commands enabled",
          failure);
    }
    if (failure instanceof JedisBusyException || startsWithAny(detail, "BUSY")) {
      return transientFailure(
          "the server is busy running a script (" + detail + "); retry later", failure);
    }
    if (startsWithAny(detail, "LOADING")) {
      return transientFailure(
          "the server is loading its data set (" + detail + "); retry in a moment", failure);
    }
    if (startsWithAny(detail, "OOM")) {
      return transientFailure(
          "the server is out of memory ("
              + detail
              + "); raise maxmemory and keep maxmemory-policy noeviction: an eviction policy"
              + " would delete live lock keys and break mutual exclusion",
          failure);
    }
    if (startsWithAny(detail, "MASTERDOWN", "TRYAGAIN", "NOREPLICAS")) {
      return transientFailure("the server cannot serve writes now (" + detail + ")", failure);
    }
    if (find(failure, ConnectException.class) != null) {
      return transientFailure(
          "connection refused; check that Redis is running and listening on "
              + settings.host
              + ":"
              + settings.port,
          failure);
    }
    if (find(failure, UnknownHostException.class) != null) {
      return transientFailure(
          "unknown host '" + settings.host + "'; check the host name and DNS", failure);
    }
    if (find(failure, NoRouteToHostException.class) != null) {
      return transientFailure(
          "no route to " + settings.host + "; check the network and firewall", failure);
    }
    if (find(failure, SocketTimeoutException.class) != null) {
      return transientFailure(
          "timed out talking to the node ("
              + detail
              + "); check that it is up and reachable, or raise connectTimeout/socketTimeout",
          failure);
    }
    if (failure instanceof JedisConnectionException) {
      return transientFailure(
          "the connection failed ("
              + detail
              + "); check that the node is up (a restarted node drops its connections)",
          failure);
    }
    if (failure instanceof JedisDataException) {
      return transientFailure("the server refused " + operation + " (" + detail + ")", failure);
    }
    return transientFailure(
        operation + " failed unexpectedly (" + failure.getClass().getName() + ": " + detail + ")",
        failure);
  }

  private RedlockException nonTransient(String message, Throwable cause) {
    return new RedlockNonTransientException(node, message, sanitized(cause));
  }

  private RedlockException transientFailure(String message, Throwable cause) {
    return new RedlockTransientException(node, message, sanitized(cause));
  }

  /**
   * The cause to attach: Jedis messages do not carry the password, but if one ever did, attach a
   * scrubbed copy instead so that stack traces in logs stay free of it.
   */
  private Throwable sanitized(Throwable cause) {
    String password = settings.password;
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (password != null && t.getMessage() != null && t.getMessage().contains(password)) {
        RuntimeException copy =
            new RuntimeException(t.getClass().getName() + ": " + scrub(t.getMessage()));
        copy.setStackTrace(t.getStackTrace());
        return copy;
      }
    }
    return cause;
  }

  /** Removes the password from a text, should a server or driver ever echo it. */
  String scrub(String text) {
    String password = settings.password;
    if (text == null) {
      return "";
    }
    return password == null ? text : text.replace(password, "***");
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

  private static boolean startsWithAny(String text, String... prefixes) {
    for (String prefix : prefixes) {
      if (text.startsWith(prefix + " ") || text.equals(prefix)) {
        return true;
      }
    }
    return false;
  }

  /** The first of {@code types} among the causes and suppressed exceptions of {@code failure}. */
  @SafeVarargs
  private static Throwable find(Throwable failure, Class<? extends Throwable>... types) {
    return find(failure, types, 0);
  }

  private static Throwable find(Throwable failure, Class<? extends Throwable>[] types, int depth) {
    // Jedis reports each address it tried as a suppressed exception of "Failed to connect"
    for (Throwable t = failure; t != null && depth < 16; t = t.getCause(), depth++) {
      for (Class<? extends Throwable> type : types) {
        if (type.isInstance(t)) {
          return t;
        }
      }
      for (Throwable suppressed : t.getSuppressed()) {
        Throwable hit = find(suppressed, types, depth + 1);
        if (hit != null) {
          return hit;
        }
      }
    }
    return null;
  }
}
