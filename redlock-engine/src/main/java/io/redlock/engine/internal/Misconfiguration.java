package io.redlock.engine.internal;

import io.redlock.RedlockNonTransientException;
import io.redlock.spi.NodeUri;
import java.net.UnknownHostException;
import javax.net.ssl.SSLHandshakeException;

/**
 * Failures that no retry fixes whatever backend reports them: an unknown host and a refused TLS
 * handshake. A backend may report them as transient (its client retries connecting); the engine
 * treats them as a misconfigured node, so that strict nodes, {@code build()} and {@code doctor}
 * give one answer for every backend.
 */
final class Misconfiguration {
  private Misconfiguration() {}

  /** {@code failure}, or a {@link RedlockNonTransientException} naming the fix when it is one. */
  static RuntimeException classify(String node, RuntimeException failure) {
    if (failure instanceof RedlockNonTransientException) {
      return failure;
    }
    for (Throwable c = failure; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof UnknownHostException) {
        return new RedlockNonTransientException(
            node,
            "unknown host ("
                + NodeUri.redact(String.valueOf(c.getMessage()))
                + "); check the host name in the node's URI",
            failure);
      }
      if (c instanceof SSLHandshakeException) {
        return new RedlockNonTransientException(
            node,
            "the TLS handshake failed ("
                + NodeUri.redact(String.valueOf(c.getMessage()))
                + "); check the server's certificate, the trust store and the URI's TLS options",
            failure);
      }
    }
    return failure;
  }
}
