package io.redlock.postgres;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.NodeUri;
import io.redlock.sql.internal.Dialect;
import io.redlock.sql.internal.SqlErrors;
import io.redlock.sql.internal.TableName;
import io.vertx.pgclient.PgException;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateException;
import java.sql.SQLException;
import java.util.Locale;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLPeerUnverifiedException;

/**
 * The Vert.x client's failures as transient or not: a server's SQLState is sorted by {@link
 * SqlErrors} (as a {@link SQLException}, so that both PostgreSQL backends agree), failures on the
 * client's side (no connection, TLS) here. Messages name the node, never a password, and the fix.
 */
final class PgErrors {
  private final String node;
  private final TableName table;
  private final Dialect dialect;
  private final boolean verifiesCertificate;

  /**
   * @param verifiesCertificate whether the connection checks the server's certificate ({@code
   *     sslmode=verify-ca}, {@code verify-full}, or {@code require} with a root certificate)
   */
  PgErrors(String node, TableName table, Dialect dialect, boolean verifiesCertificate) {
    this.node = node;
    this.table = table;
    this.dialect = dialect;
    this.verifiesCertificate = verifiesCertificate;
  }

  /** The kind of a failure, as {@link SqlErrors} sorts SQLStates; client-side failures aside. */
  static SqlErrors.Kind classify(Throwable error) {
    PgException pg = find(error, PgException.class);
    if (pg != null && pg.getSqlState() != null) {
      return SqlErrors.classify(new SQLException(pg.getErrorMessage(), pg.getSqlState()));
    }
    return SqlErrors.Kind.OTHER;
  }

  /** Translates a failure of {@code operation}. */
  RedlockException translate(String operation, Throwable error) {
    if (error instanceof RedlockException redlock) {
      return redlock;
    }
    String detail = detail(error);
    PgException pg = find(error, PgException.class);
    if (pg == null || pg.getSqlState() == null) {
      return clientSide(operation, error, detail);
    }
    return SqlErrors.forKind(
        classify(error),
        node,
        operation,
        detail,
        error,
        table,
        dialect.ddlText(table),
        "the postgresql:// URI (or the builder's connect options)");
  }

  private RedlockException clientSide(String operation, Throwable error, String detail) {
    if (find(error, CertificateException.class) != null
        || find(error, CertPathValidatorException.class) != null
        || find(error, SSLPeerUnverifiedException.class) != null) {
      return new RedlockNonTransientException(
          node,
          "the server's TLS certificate was not accepted ("
              + detail
              + "): give the certificate of the CA that signed it with sslrootcert=FILE, and with"
              + " sslmode=verify-full connect to a host name the certificate names",
          error);
    }
    String lower = detail.toLowerCase(Locale.ROOT);
    if (lower.contains("does not handle ssl") || lower.contains("invalid ssl connection")) {
      return new RedlockNonTransientException(
          node,
          "the server does not accept TLS ("
              + detail
              + "): turn TLS on in the server (ssl=on) or use sslmode=disable or prefer",
          error);
    }
    if (verifiesCertificate && lower.contains("ssl handshake failed")) {
      // Vert.x reports a refused certificate only as the connection closing during the handshake
      return new RedlockNonTransientException(
          node,
          "the TLS handshake failed ("
              + detail
              + "), most likely because the server's certificate was not accepted: give the"
              + " certificate of the CA that signed it with sslrootcert=FILE, and with"
              + " sslmode=verify-full connect to a host name the certificate names",
          error);
    }
    if (find(error, SSLException.class) != null) {
      return new RedlockTransientException(
          node, "the TLS handshake failed (" + detail + "); check the server's TLS set-up", error);
    }
    if (error instanceof IllegalArgumentException || error instanceof IllegalStateException) {
      return new RedlockNonTransientException(
          node, operation + " cannot run with these settings (" + detail + ")", error);
    }
    return new RedlockTransientException(
        node,
        "cannot connect or lost the connection ("
            + detail
            + "): check that the server is up and reachable at the URI's host and port",
        error);
  }

  /** The most telling message in the chain, with its SQLState, secrets removed. */
  static String detail(Throwable error) {
    PgException pg = find(error, PgException.class);
    if (pg != null) {
      String state = pg.getSqlState() == null ? "" : "SQLState " + pg.getSqlState() + ": ";
      String message = pg.getErrorMessage() == null ? pg.getMessage() : pg.getErrorMessage();
      return state + NodeUri.redact(String.valueOf(message).strip());
    }
    Throwable deepest = error;
    for (int depth = 0; deepest.getCause() != null && depth < 10; depth++) {
      deepest = deepest.getCause();
    }
    String outer = describe(error);
    String inner = describe(deepest);
    return NodeUri.redact(deepest == error || outer.contains(inner) ? outer : outer + ": " + inner);
  }

  private static String describe(Throwable t) {
    String message = t.getMessage();
    return message == null || message.isBlank()
        ? t.getClass().getSimpleName()
        : t.getClass().getSimpleName() + " " + message.strip();
  }

  private static <E extends Throwable> E find(Throwable error, Class<E> type) {
    Throwable t = error;
    for (int depth = 0; t != null && depth < 10; depth++) {
      if (type.isInstance(t)) {
        return type.cast(t);
      }
      t = t.getCause() == t ? null : t.getCause();
    }
    return null;
  }
}
