package io.redlock.jdbc.internal;

import com.ongres.scram.client.ScramClient;
import com.ongres.scram.common.StringPreparation;
import com.ongres.scram.common.exception.ScramException;
import io.redlock.RedlockNonTransientException;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * One connection to PostgreSQL speaking its v3 frontend/backend protocol (extended query): just
 * what the lock statements need. A statement is written and flushed by one call ({@link #send}),
 * and its answer read later, possibly by another thread, message by message ({@link #next}) under a
 * deadline. A read that runs into the deadline consumes nothing, so the connection stays usable and
 * a late answer can still be read from it; that is what the JDBC API cannot offer, and what lets
 * one thread ask every node first and read the answers afterwards.
 *
 * <p>Start-up: TLS per {@code sslmode} (the {@code SSLRequest} dance, as pgjdbc does),
 * authentication by SCRAM-SHA-256 (the server's signature is checked), MD5 or clear-text password,
 * then session settings: {@code client_encoding} UTF8, the node's {@code statement_timeout}, the
 * URL's {@code currentSchema} and {@code options}. Lock statements are named prepared statements,
 * parsed on a connection the first time they are sent on it (in the same flush as their first
 * execution, so without an extra round trip), or the unnamed statement parsed with every call where
 * the URL asks for no prepared statements; binary parameters and results.
 *
 * <p>Not thread-safe: one thread at a time, which the pool ensures by lending a connection to one
 * call at a time.
 */
final class PgWireConnection implements AutoCloseable {
  static final int BYTEA = 17;
  static final int INT8 = 20;
  static final int TEXT = 25;

  /** The largest message accepted from the server; lock statements answer in a few dozen bytes. */
  private static final int MAX_MESSAGE = 16 << 20;

  /** Statement ids a connection keeps track of (a node runs three to five statements). */
  static final int MAX_STATEMENTS = 64;

  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private byte[] rbuf = new byte[1024];
  private int rpos;
  private int rlimit;
  private byte[] wbuf = new byte[512];
  private int wpos;
  private int soTimeout = -1;

  /** The body of the message {@link #next} returned last: {@code rbuf[bodyStart, +bodyLength)}. */
  private int bodyStart;

  private int bodyLength;

  private final boolean[] prepared = new boolean[MAX_STATEMENTS];

  /**
   * The start of this connection's statement names, unique to the transport that opened it: behind
   * a pooling proxy that hands a client's messages to another client's server connection, a name
   * that meant another statement there must fail (SQLState 26000), never run the wrong statement.
   */
  private byte[] statementPrefix = "redlock_".getBytes(StandardCharsets.US_ASCII);

  /** When the pool last took it back, from nanoTime. */
  long idleSince;

  private PgWireConnection(Socket socket) throws IOException {
    this.socket = socket;
    this.in = socket.getInputStream();
    this.out = socket.getOutputStream();
  }

  /**
   * Opens a connection: TCP, TLS per the settings, start-up and authentication, all within the
   * connect timeout.
   *
   * @throws SQLException a failure with its SQLState: the server's error (wrong password, unknown
   *     database), or 08001/08006 for the network
   * @throws RedlockNonTransientException for what retrying cannot fix: TLS required but refused, a
   *     certificate not trusted, an authentication method the transport does not speak
   */
  static PgWireConnection open(PgWireSettings s, String node) throws SQLException {
    PgWireSettings.SslMode mode = s.sslMode();
    boolean tlsFirst =
        mode != PgWireSettings.SslMode.DISABLE && mode != PgWireSettings.SslMode.ALLOW;
    if (mode != PgWireSettings.SslMode.ALLOW && mode != PgWireSettings.SslMode.PREFER) {
      return open(s, node, tlsFirst);
    }
    try {
      return open(s, node, tlsFirst);
    } catch (SQLException e) {
      // pgjdbc's "allow" (plain first) and "prefer" (TLS first): pg_hba.conf has no entry for the
      // first kind of connection, or the server answered the TLS request with an error (then it
      // closes the connection): try the other kind
      if (!"28000".equals(e.getSQLState()) && !(e.getCause() instanceof TlsRequestFailed)) {
        throw e;
      }
    }
    return open(s, node, !tlsFirst);
  }

  /** The server answered the TLS request with an error message instead of 'S' or 'N'. */
  private static final class TlsRequestFailed extends IOException {
    TlsRequestFailed() {
      super("the server answered the TLS request with an error");
    }
  }

  /** Like {@link #open(PgWireSettings, String)}, naming statements with {@code prefix}. */
  static PgWireConnection open(PgWireSettings s, String node, String prefix) throws SQLException {
    PgWireConnection c = open(s, node);
    c.statementPrefix = prefix.getBytes(StandardCharsets.US_ASCII);
    return c;
  }

  private static PgWireConnection open(PgWireSettings s, String node, boolean tls)
      throws SQLException {
    Socket plain = new Socket();
    PgWireConnection c = null;
    try {
      int timeout = (int) Math.max(1, Math.min(Integer.MAX_VALUE, s.connectTimeout().toMillis()));
      plain.setTcpNoDelay(true);
      plain.setKeepAlive(s.tcpKeepAlive());
      plain.setSoTimeout(timeout);
      plain.connect(new InetSocketAddress(s.host(), s.port()), timeout);
      Socket socket = tls ? negotiateTls(plain, s, node) : plain;
      c = new PgWireConnection(socket);
      c.soTimeout = timeout;
      c.startup(s, node);
      return c;
    } catch (IOException e) {
      closeQuietly(c, plain);
      if (e instanceof SSLException ssl && s.sslMode().verifiesCertificate() && untrusted(ssl)) {
        throw new RedlockNonTransientException(
            node,
            "the TLS handshake failed ("
                + ssl.getMessage()
                + "): with sslmode="
                + sslModeText(s)
                + " the server's certificate must be signed by a certificate in "
                + s.sslRootCert()
                + (s.sslMode() == PgWireSettings.SslMode.VERIFY_FULL
                    ? " and name the host " + s.host()
                    : "")
                + " (set sslrootcert=... in the URL)",
            ssl);
      }
      // a server restarting mid-handshake, a reset, a refused connection: worth retrying
      throw new SQLException(
          (e instanceof SocketTimeoutException
                  ? "timed out connecting to "
                  : "could not connect to ")
              + s.host()
              + ":"
              + s.port()
              + " ("
              + e.getMessage()
              + ")",
          "08001",
          e);
    } catch (SQLException | RuntimeException e) {
      closeQuietly(c, plain);
      throw e;
    }
  }

  /** Whether a TLS failure is about trusting the server's certificate (or its host name). */
  private static boolean untrusted(SSLException e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof java.security.cert.CertificateException
          || t instanceof java.security.cert.CertPathValidatorException
          || t instanceof javax.net.ssl.SSLPeerUnverifiedException) {
        return true;
      }
    }
    return false;
  }

  private static void closeQuietly(PgWireConnection c, Socket plain) {
    try {
      if (c != null) {
        c.socket.close();
      }
      plain.close();
    } catch (IOException ignored) {
      // closing anyway
    }
  }

  private static String sslModeText(PgWireSettings s) {
    return s.sslMode().name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
  }

  /** The SSLRequest, then the handshake if the server agrees. */
  private static Socket negotiateTls(Socket plain, PgWireSettings s, String node)
      throws IOException {
    OutputStream o = plain.getOutputStream();
    o.write(new byte[] {0, 0, 0, 8, 0x04, (byte) 0xd2, 0x16, 0x2f}); // 80877103
    o.flush();
    int answer = plain.getInputStream().read();
    if (answer != 'S') {
      if (answer == 'N'
          && (s.sslMode() == PgWireSettings.SslMode.PREFER
              || s.sslMode() == PgWireSettings.SslMode.ALLOW)) {
        return plain;
      }
      if (answer < 0) {
        throw new EOFException("the server closed the connection at the TLS request");
      }
      if (answer == 'E') {
        // a server that cannot start a session (out of processes, say) or does not know the
        // request: worth another try, without TLS where sslmode allows it (as pgjdbc does)
        throw new TlsRequestFailed();
      }
      throw new RedlockNonTransientException(
          node,
          "the server does not accept TLS connections (answer '"
              + (char) answer
              + "'), but sslmode="
              + sslModeText(s)
              + " requires TLS: turn ssl on in the server's postgresql.conf, or lower sslmode",
          null);
    }
    SSLContext context;
    try {
      context = SSLContext.getInstance("TLS");
      context.init(null, trustManagers(s, node), null);
    } catch (GeneralSecurityException e) {
      throw new RedlockNonTransientException(node, "cannot set up TLS: " + e.getMessage(), e);
    }
    SSLSocket ssl =
        (SSLSocket) context.getSocketFactory().createSocket(plain, s.host(), s.port(), true);
    if (s.sslMode() == PgWireSettings.SslMode.VERIFY_FULL) {
      SSLParameters parameters = ssl.getSSLParameters();
      parameters.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate names the host
      ssl.setSSLParameters(parameters);
    }
    ssl.setUseClientMode(true);
    ssl.startHandshake();
    return ssl;
  }

  /**
   * pgjdbc's choice: the certificates of the root file for verify-ca and verify-full; no checks for
   * require, prefer and allow (encryption without authentication, as libpq without a root file).
   */
  private static TrustManager[] trustManagers(PgWireSettings s, String node)
      throws GeneralSecurityException {
    if (!s.sslMode().verifiesCertificate()) {
      return new TrustManager[] {new TrustingAnyServer()};
    }
    List<Certificate> roots = new ArrayList<>();
    try (InputStream pem = Files.newInputStream(s.sslRootCert())) {
      roots.addAll(CertificateFactory.getInstance("X.509").generateCertificates(pem));
    } catch (IOException e) {
      throw new RedlockNonTransientException(
          node,
          "sslmode="
              + sslModeText(s)
              + " checks the server's certificate against the certificates in "
              + s.sslRootCert()
              + ", which cannot be read ("
              + e
              + "): set sslrootcert=<PEM file> in the URL",
          e);
    }
    if (roots.isEmpty()) {
      throw new RedlockNonTransientException(
          node, "no certificate in " + s.sslRootCert() + " (sslrootcert): it must be PEM", null);
    }
    KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    try {
      store.load(null, null);
    } catch (IOException e) {
      throw new GeneralSecurityException(e);
    }
    for (int i = 0; i < roots.size(); i++) {
      store.setCertificateEntry("root-" + i, roots.get(i));
    }
    TrustManagerFactory factory =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    factory.init(store);
    return factory.getTrustManagers();
  }

  /** For sslmode require, prefer and allow: encryption without checking who answers. */
  private static final class TrustingAnyServer implements X509TrustManager {
    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) {}

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) {}

    @Override
    public X509Certificate[] getAcceptedIssuers() {
      return new X509Certificate[0];
    }
  }

  private void startup(PgWireSettings s, String node) throws IOException, SQLException {
    int start = begin(-1);
    putInt(196_608); // protocol 3.0
    putParameter("user", s.user());
    putParameter("database", s.database());
    putParameter("client_encoding", "UTF8");
    putParameter("application_name", s.applicationName());
    putParameter("statement_timeout", Long.toString(Math.max(1, s.statementTimeout().toMillis())));
    if (s.searchPath() != null) {
      putParameter("search_path", s.searchPath());
    }
    if (s.options() != null) {
      putParameter("options", s.options());
    }
    putByte(0);
    end(start);
    flush();
    long deadline = System.nanoTime() + s.connectTimeout().toNanos();
    ScramClient scram = null;
    boolean scramVerified = false;
    boolean authenticated = false;
    while (true) {
      int type = next(deadline);
      if (type < 0) {
        throw new SocketTimeoutException("no answer to the start-up message in time");
      }
      switch (type) {
        case 'R' -> {
          int code = bodyInt(0);
          if (scram != null && code != 11 && code != 12 && !(code == 0 && scramVerified)) {
            // once SCRAM has begun, only its own steps may follow, and success only after the
            // server proved it knows the password: an impostor must not skip that proof
            throw scramRefused(node, "the server left SCRAM before proving it knows the password");
          }
          switch (code) {
            case 0 -> authenticated = true;
            case 3 -> passwordMessage(password(s, node).getBytes(StandardCharsets.UTF_8), true);
            case 5 -> passwordMessage(md5(s.user(), password(s, node), 4), true);
            case 10 -> scram = scramStart(s, node);
            case 11 -> {
              if (scram == null) {
                throw scramRefused(node, "a SCRAM continuation came without a start");
              }
              try {
                scram.serverFirstMessage(bodyText(4, bodyLength - 4));
                passwordMessage(
                    scram.clientFinalMessage().toString().getBytes(StandardCharsets.UTF_8), false);
              } catch (ScramException | RuntimeException e) {
                throw scramRefused(node, "the server's first SCRAM message is malformed");
              }
            }
            case 12 -> {
              if (scram == null) {
                throw scramRefused(node, "a SCRAM final message came without a start");
              }
              try {
                scram.serverFinalMessage(bodyText(4, bodyLength - 4));
              } catch (ScramException | RuntimeException e) {
                throw scramRefused(
                    node,
                    "the server's SCRAM signature is wrong: it does not know the password, so it"
                        + " is not the server it claims to be");
              }
              scramVerified = true;
            }
            default ->
                throw new RedlockNonTransientException(
                    node,
                    "the server asks for authentication method "
                        + code
                        + " (2 Kerberos, 7 GSSAPI, 9 SSPI), which redlock.wireProtocol does not"
                        + " speak (only password, MD5 and SCRAM-SHA-256): with"
                        + " redlock.wireProtocol=auto (the default) or false the node runs its"
                        + " lock calls over JDBC instead; or change its pg_hba.conf",
                    null);
          }
        }
        case 'E' -> throw serverError();
        case 'Z' -> {
          if (scram != null && !scramVerified) {
            throw scramRefused(node, "the server left SCRAM before proving it knows the password");
          }
          if (!authenticated) {
            throw new RedlockNonTransientException(
                node,
                "the server declared itself ready without confirming authentication (a protocol"
                    + " violation); connection refused",
                null);
          }
          return;
        }
        default -> {} // ParameterStatus, BackendKeyData, notices, NegotiateProtocolVersion
      }
    }
  }

  /** A SCRAM exchange gone wrong: never a retry, and never the password in the message. */
  private static RedlockNonTransientException scramRefused(String node, String why) {
    return new RedlockNonTransientException(
        node, "SCRAM authentication failed: " + why + "; connection refused", null);
  }

  private static String password(PgWireSettings s, String node) {
    if (s.password() == null) {
      throw new RedlockNonTransientException(
          node,
          "the server asks for a password and none is set: add password=... to the URL (or a"
              + " line for this server to the .pgpass file)",
          null);
    }
    return s.password();
  }

  private ScramClient scramStart(PgWireSettings s, String node) throws IOException {
    List<String> mechanisms = new ArrayList<>();
    int i = 4;
    while (i < bodyLength && rbuf[bodyStart + i] != 0) {
      int end = i;
      while (end < bodyLength && rbuf[bodyStart + end] != 0) {
        end++;
      }
      mechanisms.add(bodyText(i, end - i));
      i = end + 1;
    }
    if (!mechanisms.contains("SCRAM-SHA-256")) {
      throw new RedlockNonTransientException(
          node,
          "the server offers SASL mechanisms "
              + mechanisms
              + " only; redlock.wireProtocol speaks SCRAM-SHA-256 without channel binding",
          null);
    }
    ScramClient scram =
        ScramClient.builder()
            .advertisedMechanisms(List.of("SCRAM-SHA-256"))
            .username("*") // PostgreSQL takes the user from the start-up message
            .password(password(s, node).toCharArray())
            // as PostgreSQL and pgjdbc: a password SASLprep rejects is used as it is
            .stringPreparation(StringPreparation.POSTGRESQL_PREPARATION)
            .build();
    byte[] first = scram.clientFirstMessage().toString().getBytes(StandardCharsets.UTF_8);
    int start = begin('p');
    putCString("SCRAM-SHA-256");
    putInt(first.length);
    putBytes(first);
    end(start);
    flush();
    return scram;
  }

  private void passwordMessage(byte[] data, boolean nulTerminated) throws IOException {
    int start = begin('p');
    putBytes(data);
    if (nulTerminated) {
      putByte(0);
    }
    end(start);
    flush();
  }

  /** MD5 password: "md5" + md5(md5(password + user) + salt), the salt at {@code saltAt}. */
  private byte[] md5(String user, String password, int saltAt) throws IOException {
    try {
      MessageDigest md5 = MessageDigest.getInstance("MD5");
      String inner =
          HexFormat.of().formatHex(md5.digest((password + user).getBytes(StandardCharsets.UTF_8)));
      md5.update(inner.getBytes(StandardCharsets.US_ASCII));
      md5.update(rbuf, bodyStart + saltAt, 4);
      return ("md5" + HexFormat.of().formatHex(md5.digest())).getBytes(StandardCharsets.US_ASCII);
    } catch (GeneralSecurityException e) {
      throw new IOException("MD5 is not available in this JVM", e);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Lock statements

  /** Whether statement {@code id} is prepared on this connection. */
  boolean isPrepared(int id) {
    return prepared[id];
  }

  /**
   * Buffers a Parse of statement {@code id} as {@code "<prefix><id>"}, or of the unnamed statement
   * if {@code id} is {@link #UNNAMED}.
   */
  void parse(int id, String sql, int... parameterTypes) {
    int start = begin('P');
    putStatementName(id);
    putCString(sql);
    putShort(parameterTypes.length);
    for (int t : parameterTypes) {
      putInt(t);
    }
    end(start);
    if (id != UNNAMED) {
      prepared[id] = true; // a failure to parse fails the call, and the connection is closed
    }
  }

  /** The unnamed statement: parsed again with every call (for pooling proxies that need it). */
  static final int UNNAMED = -1;

  /**
   * Starts a Bind of statement {@code id} with {@code parameters} binary parameters, to be followed
   * by exactly that many {@code param*} calls and then {@link #executeAndSync()}.
   */
  void bind(int id, int parameters) {
    bindStart = begin('B');
    putByte(0); // the unnamed portal
    putStatementName(id);
    putShort(1); // one format code for all parameters:
    putShort(1); // binary
    putShort(parameters);
  }

  private int bindStart;

  void paramBytes(byte[] value) {
    putInt(value.length);
    putBytes(value);
  }

  void paramText(String value) {
    paramBytes(value.getBytes(StandardCharsets.UTF_8));
  }

  void paramLong(long value) {
    putInt(8);
    ensureWrite(8);
    for (int shift = 56; shift >= 0; shift -= 8) {
      wbuf[wpos++] = (byte) (value >>> shift);
    }
  }

  /** Ends the Bind (binary results), then Execute and Sync. */
  void executeAndSync() {
    putShort(1); // one format code for all result columns:
    putShort(1); // binary
    end(bindStart);
    int start = begin('E');
    putByte(0); // the unnamed portal
    putInt(0); // all rows
    end(start);
    start = begin('S');
    end(start);
  }

  /** Sends what was buffered. */
  void flush() throws IOException {
    try {
      out.write(wbuf, 0, wpos);
      out.flush();
    } finally {
      wpos = 0;
    }
  }

  private void putStatementName(int id) {
    if (id == UNNAMED) {
      putByte(0);
      return;
    }
    ensureWrite(statementPrefix.length + 3);
    System.arraycopy(statementPrefix, 0, wbuf, wpos, statementPrefix.length);
    wpos += statementPrefix.length;
    if (id >= 10) {
      wbuf[wpos++] = (byte) ('0' + id / 10);
    }
    wbuf[wpos++] = (byte) ('0' + id % 10);
    wbuf[wpos++] = 0;
  }

  // -------------------------------------------------------------------------------------------
  // Reading

  /**
   * The type of the next message from the server, waiting for it until {@code deadline} (from
   * nanoTime); its body is then read with {@link #bodyInt}, {@link #bodyShort}, {@link #bodyByte},
   * {@link #bodyText} until the next call. Returns -1 if the message did not arrive (whole) in
   * time, having consumed nothing of it: call again to go on waiting.
   *
   * @throws IOException if the connection failed or the server closed it
   */
  int next(long deadline) throws IOException {
    while (true) {
      int available = rlimit - rpos;
      if (available >= 5) {
        int length = getInt(rbuf, rpos + 1);
        if (length < 4 || length > MAX_MESSAGE) {
          throw new IOException("protocol error: a message of length " + length);
        }
        if (available >= 1 + length) {
          int type = rbuf[rpos] & 255;
          bodyStart = rpos + 5;
          bodyLength = length - 4;
          rpos += 1 + length;
          return type;
        }
        makeRoom(1 + length);
      } else {
        makeRoom(5);
      }
      long left = deadline - System.nanoTime();
      // even with no time left, one short read: the answer may be in the socket's buffer already
      int millis = left <= 0 ? 1 : (int) Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000);
      // Setting the timeout takes a lock and boxes an Integer: the one in force is kept when it is
      // at most an eighth (plus 1 ms) longer than asked, as the Redis backend does.
      if (soTimeout < millis || soTimeout > millis + (millis >> 3) + 1) {
        socket.setSoTimeout(millis);
        soTimeout = millis;
      }
      int n;
      try {
        n = in.read(rbuf, rlimit, rbuf.length - rlimit);
      } catch (SocketTimeoutException e) {
        return -1; // nothing consumed: the connection can be read again
      }
      if (n < 0) {
        throw new EOFException("the server closed the connection");
      }
      rlimit += n;
      if (left <= 0 && rlimit - rpos < 5) {
        return -1;
      }
    }
  }

  /** Makes room for a message of {@code size} bytes from {@code rpos}. */
  private void makeRoom(int size) {
    if (rpos + size <= rbuf.length) {
      return;
    }
    int kept = rlimit - rpos;
    byte[] target = size > rbuf.length ? new byte[Math.max(size, rbuf.length * 2)] : rbuf;
    System.arraycopy(rbuf, rpos, target, 0, kept);
    rbuf = target;
    rpos = 0;
    rlimit = kept;
  }

  int bodyInt(int at) {
    return getInt(rbuf, bodyStart + at);
  }

  int bodyShort(int at) {
    return ((rbuf[bodyStart + at] & 255) << 8) | (rbuf[bodyStart + at + 1] & 255);
  }

  int bodyByte(int at) {
    return rbuf[bodyStart + at] & 255;
  }

  String bodyText(int at, int length) {
    return new String(rbuf, bodyStart + at, length, StandardCharsets.UTF_8);
  }

  /**
   * The row count at the end of a CommandComplete tag ({@code INSERT 0 1}, {@code UPDATE 1}, {@code
   * DELETE 0}), or -1 if there is none.
   */
  long commandCount() {
    int end = bodyLength - 1; // the terminating NUL
    long count = 0;
    long scale = 1;
    int i = end - 1;
    for (; i >= 0; i--) {
      int b = rbuf[bodyStart + i];
      if (b < '0' || b > '9') {
        break;
      }
      count += (b - '0') * scale;
      scale *= 10;
    }
    return i == end - 1 ? -1 : count;
  }

  /** The ErrorResponse just read, as an exception with its SQLState. */
  SQLException serverError() {
    String state = null;
    String message = null;
    String severity = null;
    int i = 0;
    while (i < bodyLength && rbuf[bodyStart + i] != 0) {
      char field = (char) rbuf[bodyStart + i++];
      int start = i;
      while (i < bodyLength && rbuf[bodyStart + i] != 0) {
        i++;
      }
      String value = bodyText(start, i - start);
      switch (field) {
        case 'C' -> state = value;
        case 'M' -> message = value;
        case 'V' -> severity = value;
        default -> {}
      }
      i++;
    }
    return new SQLException(
        (severity == null ? "ERROR" : severity) + ": " + (message == null ? "?" : message), state);
  }

  // -------------------------------------------------------------------------------------------
  // Writing

  /** Starts a message of {@code type} (or none, for the start-up message, if negative). */
  private int begin(int type) {
    ensureWrite(5);
    if (type >= 0) {
      wbuf[wpos++] = (byte) type;
    }
    int start = wpos;
    wpos += 4; // the length, filled in by end()
    return start;
  }

  private void end(int start) {
    int length = wpos - start;
    wbuf[start] = (byte) (length >>> 24);
    wbuf[start + 1] = (byte) (length >>> 16);
    wbuf[start + 2] = (byte) (length >>> 8);
    wbuf[start + 3] = (byte) length;
  }

  private void ensureWrite(int n) {
    if (wpos + n > wbuf.length) {
      wbuf = java.util.Arrays.copyOf(wbuf, Math.max(wpos + n, wbuf.length * 2));
    }
  }

  private void putByte(int b) {
    ensureWrite(1);
    wbuf[wpos++] = (byte) b;
  }

  private void putShort(int v) {
    ensureWrite(2);
    wbuf[wpos++] = (byte) (v >>> 8);
    wbuf[wpos++] = (byte) v;
  }

  private void putInt(int v) {
    ensureWrite(4);
    wbuf[wpos++] = (byte) (v >>> 24);
    wbuf[wpos++] = (byte) (v >>> 16);
    wbuf[wpos++] = (byte) (v >>> 8);
    wbuf[wpos++] = (byte) v;
  }

  private void putBytes(byte[] b) {
    ensureWrite(b.length);
    System.arraycopy(b, 0, wbuf, wpos, b.length);
    wpos += b.length;
  }

  private void putCString(String s) {
    putBytes(s.getBytes(StandardCharsets.UTF_8));
    putByte(0);
  }

  private void putParameter(String name, String value) {
    putCString(name);
    putCString(value);
  }

  private static int getInt(byte[] b, int at) {
    return ((b[at] & 255) << 24)
        | ((b[at + 1] & 255) << 16)
        | ((b[at + 2] & 255) << 8)
        | (b[at + 3] & 255);
  }

  /** Says goodbye (Terminate) and closes the socket. */
  @Override
  public void close() {
    try {
      if (!socket.isClosed()) {
        socket.setSoTimeout(100);
        wpos = 0;
        int start = begin('X');
        end(start);
        flush();
      }
    } catch (IOException | RuntimeException ignored) {
      // closing anyway
    } finally {
      try {
        socket.close();
      } catch (IOException ignored) {
        // the socket is gone either way
      }
    }
  }
}
