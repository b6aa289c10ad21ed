package io.redlock.redis.internal;

import java.time.Duration;
import javax.net.ssl.SSLSocketFactory;

/**
 * The validated settings of one Redis node. {@link #toString()} never shows the password.
 *
 * @param host host name or IP literal
 * @param port TCP port
 * @param tls connect with TLS ({@code rediss://})
 * @param user ACL user, or {@code null} for the default user
 * @param password password, or {@code null}
 * @param database database index selected on every connection
 * @param connectTimeout bound on connecting and on waiting for a free pooled connection
 * @param socketTimeout bound on reads that no caller waits for: connection set-up, validation, late
 *     replies after a caller gave up
 * @param poolSize most connections open to the node at once
 * @param keyPrefix prepended to every lock key (empty for none)
 * @param verifyHostname with TLS, check that the certificate matches the host
 * @param sslSocketFactory with TLS, the socket factory, or {@code null} for the JVM's default
 */
public record RedisNodeSettings(
    String host,
    int port,
    boolean tls,
    String user,
    String password,
    int database,
    Duration connectTimeout,
    Duration socketTimeout,
    int poolSize,
    String keyPrefix,
    boolean verifyHostname,
    SSLSocketFactory sslSocketFactory) {

  /** The node's name for messages: scheme, host, port and database, never credentials. */
  public String name() {
    String h = host.contains(":") ? "[" + host + "]" : host;
    return (tls ? "rediss" : "redis") + "://" + h + ":" + port + "/" + database;
  }

  @Override
  public String toString() {
    return name()
        + " (user="
        + (user == null ? "default" : user)
        + ", password="
        + (password == null ? "none" : "***")
        + ", connectTimeout="
        + connectTimeout.toMillis()
        + "ms, socketTimeout="
        + socketTimeout.toMillis()
        + "ms, poolSize="
        + poolSize
        + ", keyPrefix='"
        + keyPrefix
        + "'"
        + (tls ? ", verifyHostname=" + verifyHostname : "")
        + ")";
  }
}
