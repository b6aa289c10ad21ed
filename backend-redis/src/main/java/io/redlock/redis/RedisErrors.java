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
import java.util.List;
import java.util.Locale;
import java.util.NoSuchElementException;
import javax.net.ssl.SSLException;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisBusyException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

/** Jedis and socket failures as the library's exceptions, naming the node and what to do. */
final class RedisErrors {
  /**
   * Server errors, one a line: the reply's first word (or {@code ~} and a phrase its lower-case
   * text contains), {@code T} if a retry may help (else {@code N}), and what to say: {@code %s} is
   * the server's message, {@code {op}} the operation, {@code {db}} the database index.
   */
  private static final List<String[]> RULES =
      """
      NOAUTH N the server requires a password (%s); give it in the node URI: redis://:password@host:port
      NOPERM N the ACL user may not run {op} (%s); grant it e.g. ACL SETUSER <user> +set +get +del \
      +pexpire +eval +evalsha ~<keyPrefix>*
      WRONGPASS N authentication failed (%s); check the user and password in the node URI \
      (redis://user:password@host:port, password percent-encoded)
      ~without_any_password_configured N a password was given but the server has none configured \
      (%s); remove the password from the node URI or set requirepass on the server
      ~db_index_is_out_of_range N database {db} does not exist on this server (%s); use an index \
      below the server's 'databases' setting (16 by default)
      ~invalid_db_index N database {db} does not exist on this server (%s); use an index below the \
      server's 'databases' setting (16 by default)
      READONLY N the node is a read-only replica (%s); point the node URI at a primary: locks must \
      be written
      MOVED,ASK,CLUSTERDOWN,CROSSSLOT N the node is part of a Redis Cluster (%s); Redlock needs \
      independent nodes: use standalone servers (or one URI per independent primary)
      ~wrongtype N the lock key holds a value of another type (%s); another application uses this \
      key name: set a keyPrefix
      ~err_unknown_command N {op} is not available on this server (%s); Redlock needs SET with NX/PX \
      and Lua scripting (EVAL/EVALSHA), Redis 2.6.12 or later with those commands enabled
      BUSY T the server is busy running a script (%s); retry later
      LOADING T the server is loading its data set (%s); retry soon
      OOM T the server is out of memory (%s); raise maxmemory and keep maxmemory-policy noeviction: \
      an eviction policy would delete live lock keys and break mutual exclusion
      MASTERDOWN,TRYAGAIN,NOREPLICAS T the server cannot serve writes now (%s)
      """
          .lines()
          .map(line -> line.split(" ", 3))
          .toList();

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
      return fail(true, failure, "%s", poolBusy(settings.connectTimeout));
    }
    for (String[] rule : RULES) {
      if (matches(rule[0], detail, lower)) {
        String message = rule[2].replace("{op}", operation).replace("{db}", "" + settings.database);
        return fail(rule[1].equals("T"), failure, message, detail);
      }
    }
    if (failure instanceof JedisAccessControlException || failure instanceof JedisBusyException) {
      return translate(
          new JedisDataException(
              (failure instanceof JedisBusyException ? "BUSY " : "WRONGPASS ") + detail, failure),
          operation);
    }
    String message;
    if (find(failure, ConnectException.class) != null) {
      message =
          "connection refused; check that Redis is running and listening on "
              + new HostAndPort(settings.host, settings.port);
    } else if (find(failure, UnknownHostException.class) != null) {
      message = "unknown host '" + settings.host + "'; check the host name and DNS";
    } else if (find(failure, NoRouteToHostException.class) != null) {
      message = "no route to " + settings.host + "; check the network and firewall";
    } else if (find(failure, SocketTimeoutException.class) != null) {
      message =
          "timed out talking to the node ("
              + detail
              + "); check that it is up and reachable, or raise connectTimeout/socketTimeout";
    } else if (failure instanceof JedisConnectionException) {
      message =
          "the connection failed ("
              + detail
              + "); check that the node is up (a restarted node drops its connections)";
    } else if (failure instanceof JedisDataException) {
      message = "the server refused " + operation + " (" + detail + ")";
    } else {
      message =
          operation + " failed unexpectedly (" + failure.getClass().getName() + ": " + detail + ")";
    }
    return fail(true, failure, "%s", message);
  }

  /** Why a call that waited {@code waited} for a pooled connection got none. */
  String poolBusy(Duration waited) {
    return String.format(
        "no connection came free within %d ms: all %d were busy with calls the node had not"
            + " answered, or connecting took longer; check that the node is not stalled, or raise"
            + " poolSize or connectTimeout",
        waited.toMillis(), settings.poolSize);
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

  private static boolean matches(String pattern, String detail, String lower) {
    if (pattern.startsWith("~")) {
      return lower.contains(pattern.substring(1).replace('_', ' '));
    }
    for (String word : pattern.split(",")) {
      if (detail.startsWith(word + " ") || detail.equals(word)) {
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
