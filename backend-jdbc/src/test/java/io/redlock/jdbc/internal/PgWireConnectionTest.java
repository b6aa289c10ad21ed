package io.redlock.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.jdbc.TestDatabases;
import io.redlock.testservers.FreePorts;
import io.redlock.testservers.PostgresServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The wire-protocol connection against real PostgreSQL servers: start-up, every password method,
 * TLS per sslmode, and the errors a user meets (wrong password, unknown database, TLS refused,
 * certificate not trusted), classified and worded as the JDBC path's, never showing a password.
 */
class PgWireConnectionTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(5);

  private static PgWireSettings settings(String url) {
    return PgWireSettings.parse(url, TIMEOUT, TIMEOUT);
  }

  private static String url(int port, String user, String password, String more) {
    return "jdbc:postgresql://127.0.0.1:"
        + port
        + "/postgres?user="
        + user
        + "&password="
        + password
        + more;
  }

  /** Runs one query on the connection; answers its first row's first column as text, or null. */
  private static String query(PgWireConnection c, String sql) throws IOException, SQLException {
    int id = 0;
    while (c.isPrepared(id)) {
      id++; // a statement name of its own on this connection
    }
    c.parse(id, sql);
    c.bind(id, 0);
    c.executeAndSync();
    c.flush();
    String first = null;
    long deadline = System.nanoTime() + TIMEOUT.toNanos();
    while (true) {
      int type = c.next(deadline);
      switch (type) {
        case -1 -> throw new AssertionError("no answer to " + sql);
        case 'E' -> throw c.serverError();
        case 'D' -> {
          // binary results: a boolean is one byte, an int4 four
          int length = c.bodyInt(2);
          first =
              length == 1
                  ? Boolean.toString(c.bodyByte(6) != 0)
                  : length == 4 ? Integer.toString(c.bodyInt(6)) : c.bodyText(6, length);
        }
        case 'Z' -> {
          return first;
        }
        default -> {}
      }
    }
  }

  private static RedlockException translated(Throwable e) {
    return SqlErrors.translate("node", "tryAcquire", e, new TableName("t"), "ddl");
  }

  @Nested
  class OnAPlainServer {
    private final int port = TestDatabases.postgres().port();

    @Test
    void scramAuthenticatesAndSettingsReachTheSession() throws Exception {
      String url =
          url(port, "postgres", PostgresServer.PASSWORD, "&currentSchema=pg_catalog,public");
      try (PgWireConnection c = PgWireConnection.open(settings(url), "node")) {
        assertThat(query(c, "SELECT current_setting('search_path')"))
            .isEqualTo("pg_catalog,public");
        assertThat(query(c, "SELECT current_setting('statement_timeout')")).isEqualTo("5s");
        assertThat(query(c, "SELECT current_setting('client_encoding') = 'UTF8'"))
            .isEqualTo("true");
        // prefer, on a server without TLS: plain
        assertThat(query(c, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"))
            .isEqualTo("false");
      }
    }

    @Test
    void aWrongPasswordIsNonTransientAndNeverShown() {
      String secret = "wrong-secret-4711";
      assertThatThrownBy(
              () -> PgWireConnection.open(settings(url(port, "postgres", secret, "")), "node"))
          .isInstanceOfSatisfying(
              SQLException.class,
              e -> {
                assertThat(e.getSQLState()).isEqualTo("28P01");
                RedlockException r = translated(e);
                assertThat(r).isInstanceOf(RedlockNonTransientException.class);
                assertThat(r.getMessage())
                    .contains("authentication failed")
                    .contains("check the user and password")
                    .doesNotContain(secret);
              });
    }

    @Test
    void anUnknownDatabaseIsNamed() {
      String url =
          "jdbc:postgresql://127.0.0.1:"
              + port
              + "/no_such_db?user=postgres&password="
              + PostgresServer.PASSWORD;
      assertThatThrownBy(() -> PgWireConnection.open(settings(url), "node"))
          .isInstanceOfSatisfying(
              SQLException.class,
              e -> {
                assertThat(e.getSQLState()).isEqualTo("3D000");
                assertThat(translated(e).getMessage()).contains("does not exist");
              });
    }

    @Test
    void sslRequiredButRefusedSaysSo() {
      String url = url(port, "postgres", PostgresServer.PASSWORD, "&sslmode=require");
      assertThatThrownBy(() -> PgWireConnection.open(settings(url), "node"))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("does not accept TLS")
          .hasMessageContaining("sslmode=require");
    }

    @Test
    void nothingListeningIsATransientConnectionFailure() {
      String url = url(FreePorts.find(), "postgres", PostgresServer.PASSWORD, "&sslmode=disable");
      assertThatThrownBy(() -> PgWireConnection.open(settings(url), "node"))
          .isInstanceOfSatisfying(
              SQLException.class,
              e -> {
                assertThat(e.getSQLState()).isEqualTo("08001");
                assertThat(translated(e))
                    .isInstanceOf(RedlockTransientException.class)
                    .hasMessageContaining("cannot connect");
              });
    }

    @Test
    void aMessageLongerThanTheBufferIsReadWhole() throws Exception {
      String url = url(port, "postgres", PostgresServer.PASSWORD, "");
      try (PgWireConnection c = PgWireConnection.open(settings(url), "node")) {
        assertThat(query(c, "SELECT repeat('x', 100000)")).hasSize(100_000);
        assertThat(query(c, "SELECT 42")).isEqualTo("42");
      }
    }
  }

  @Nested
  class OnAServerWithTlsAndEveryPasswordMethod {
    private static PostgresServer server;

    @BeforeAll
    static void start() throws SQLException {
      server = PostgresServer.startLocalWithTls();
      try (Connection c = DriverManager.getConnection(server.jdbcUrl());
          Statement s = c.createStatement()) {
        s.execute("SET password_encryption = 'md5'");
        s.execute("CREATE ROLE redlock_md5 LOGIN SUPERUSER PASSWORD 'md5-pw'");
        s.execute(
            "CREATE ROLE "
                + PostgresServer.CLEARTEXT_USER
                + " LOGIN SUPERUSER PASSWORD 'clear-pw'");
      }
    }

    @AfterAll
    static void stop() {
      server.close();
    }

    private String url(String user, String password, String more) {
      return PgWireConnectionTest.url(server.port(), user, password, more);
    }

    private String ssl(PgWireConnection c) throws Exception {
      return query(c, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
    }

    @Test
    void md5AndClearTextPasswordsAuthenticate() throws Exception {
      try (PgWireConnection c =
          PgWireConnection.open(settings(url("redlock_md5", "md5-pw", "&sslmode=disable")), "n")) {
        assertThat(query(c, "SELECT current_user")).isEqualTo("redlock_md5");
      }
      try (PgWireConnection c =
          PgWireConnection.open(
              settings(url(PostgresServer.CLEARTEXT_USER, "clear-pw", "&sslmode=require")), "n")) {
        assertThat(query(c, "SELECT current_user")).isEqualTo(PostgresServer.CLEARTEXT_USER);
      }
      assertThatThrownBy(
              () ->
                  PgWireConnection.open(
                      settings(url("redlock_md5", "not-it", "&sslmode=disable")), "n"))
          .isInstanceOfSatisfying(
              SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("28P01"));
    }

    @Test
    void allowConnectsWithoutTlsWhenTheServerAcceptsThat() throws Exception {
      try (PgWireConnection c =
          PgWireConnection.open(
              settings(url("postgres", PostgresServer.PASSWORD, "&sslmode=allow")), "n")) {
        assertThat(ssl(c)).isEqualTo("false");
      }
    }

    @Test
    void preferAndRequireEncryptWithoutCheckingTheCertificate() throws Exception {
      for (String mode : new String[] {"prefer", "require"}) {
        try (PgWireConnection c =
            PgWireConnection.open(
                settings(url("postgres", PostgresServer.PASSWORD, "&sslmode=" + mode)), "n")) {
          assertThat(ssl(c)).as(mode).isEqualTo("true");
        }
      }
      try (PgWireConnection c =
          PgWireConnection.open(
              settings(url("postgres", PostgresServer.PASSWORD, "&sslmode=disable")), "n")) {
        assertThat(ssl(c)).isEqualTo("false");
      }
    }

    @Test
    void verifyFullAcceptsTheTrustedCertificateForItsHost() throws Exception {
      String more = "&sslmode=verify-full&sslrootcert=" + server.certificate();
      try (PgWireConnection c =
          PgWireConnection.open(settings(url("postgres", PostgresServer.PASSWORD, more)), "n")) {
        assertThat(ssl(c)).isEqualTo("true");
      }
    }

    @Test
    void verifyCaAcceptsTheTrustedCertificateWhateverTheHostName() throws Exception {
      // the certificate names 127.0.0.1 only; verify-ca checks the signature, not the name
      String url =
          "jdbc:postgresql://localhost:"
              + server.port()
              + "/postgres?user=postgres&password="
              + PostgresServer.PASSWORD
              + "&sslmode=verify-ca&sslrootcert="
              + server.certificate();
      try (PgWireConnection c = PgWireConnection.open(settings(url), "n")) {
        assertThat(ssl(c)).isEqualTo("true");
      }
    }

    @Test
    void verifyFullRefusesAnotherHostName() {
      // the certificate names 127.0.0.1 only
      String url =
          "jdbc:postgresql://localhost:"
              + server.port()
              + "/postgres?user=postgres&password="
              + PostgresServer.PASSWORD
              + "&sslmode=verify-full&sslrootcert="
              + server.certificate();
      assertThatThrownBy(() -> PgWireConnection.open(settings(url), "n"))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("TLS handshake failed")
          .hasMessageContaining("name the host localhost");
    }

    @Test
    void verifyCaRefusesACertificateNotSignedByTheRoots() throws Exception {
      Path other = Files.createTempFile("other-root", ".crt");
      try {
        // a root that did not sign the server's certificate: the JDK's own test of trust
        Files.writeString(other, otherRoot());
        String more = "&sslmode=verify-ca&sslrootcert=" + other;
        assertThatThrownBy(
                () ->
                    PgWireConnection.open(
                        settings(url("postgres", PostgresServer.PASSWORD, more)), "n"))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("TLS handshake failed")
            .hasMessageContaining(other.toString());
      } finally {
        Files.deleteIfExists(other);
      }
    }

    @Test
    void verifyCaWithoutARootFileSaysWhichFile() {
      String more = "&sslmode=verify-ca&sslrootcert=/nonexistent/root.crt";
      assertThatThrownBy(
              () ->
                  PgWireConnection.open(
                      settings(url("postgres", PostgresServer.PASSWORD, more)), "n"))
          .isInstanceOf(RedlockNonTransientException.class)
          .hasMessageContaining("/nonexistent/root.crt")
          .hasMessageContaining("sslrootcert");
    }

    /** A certificate of its own, made like the server's, but with a different key. */
    private String otherRoot() throws Exception {
      Path dir = Files.createTempDirectory("other-root");
      try {
        return Files.readString(PostgresServer.selfSignedCertificate(dir, "other", "other"));
      } finally {
        try (var files = Files.list(dir)) {
          for (Path f : files.toList()) {
            Files.delete(f);
          }
        }
        Files.delete(dir);
      }
    }
  }

  /**
   * A fake server on a loopback socket, scripted message by message, for what a real server never
   * does: skip or fake SCRAM's proof, or stop in the middle of a message.
   */
  @Nested
  class AgainstAScriptedServer {
    /** One server conversation on its own thread. */
    @FunctionalInterface
    interface Script {
      void run(java.io.DataInputStream in, java.io.DataOutputStream out) throws Exception;
    }

    /** A server that plays one script per connection, in order. */
    private java.net.ServerSocket listen(Script... scripts) throws IOException {
      java.net.ServerSocket server =
          new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
      Thread t =
          new Thread(
              () -> {
                for (Script script : scripts) {
                  try (java.net.Socket s = server.accept()) {
                    s.setSoTimeout(10_000);
                    script.run(
                        new java.io.DataInputStream(s.getInputStream()),
                        new java.io.DataOutputStream(s.getOutputStream()));
                    s.getInputStream().read(); // until the client closes
                  } catch (Exception ignored) {
                    // the client went away
                  }
                }
              },
              "scripted-postgres");
      t.setDaemon(true);
      t.start();
      return server;
    }

    private PgWireSettings settingsFor(java.net.ServerSocket server) {
      return settings(
          PgWireConnectionTest.url(server.getLocalPort(), "u", "pw", "&sslmode=disable"));
    }

    /** Reads one message of the client (the start-up message has no type byte). */
    private byte[] readMessage(java.io.DataInputStream in, boolean typed) throws IOException {
      if (typed) {
        in.readByte();
      }
      byte[] body = new byte[in.readInt() - 4];
      in.readFully(body);
      return body;
    }

    private void write(java.io.DataOutputStream out, char type, byte[] body) throws IOException {
      out.writeByte(type);
      out.writeInt(body.length + 4);
      out.write(body);
      out.flush();
    }

    private byte[] auth(int code, String data) {
      byte[] text = data.getBytes(java.nio.charset.StandardCharsets.UTF_8);
      return java.nio.ByteBuffer.allocate(4 + text.length).putInt(code).put(text).array();
    }

    /** Start-up, then SCRAM up to the client's final message; answers the client's nonce. */
    private void scramUntilClientFinal(java.io.DataInputStream in, java.io.DataOutputStream out)
        throws IOException {
      readMessage(in, false);
      write(out, 'R', auth(10, "SCRAM-SHA-256\0\0"));
      String first = new String(readMessage(in, true), java.nio.charset.StandardCharsets.UTF_8);
      String nonce = first.substring(first.indexOf("r=") + 2);
      write(
          out,
          'R',
          auth(
              11,
              "r="
                  + nonce
                  + "server,s="
                  + java.util.Base64.getEncoder().encodeToString(new byte[16])
                  + ",i=4096"));
      readMessage(in, true); // the client's final message with its proof
    }

    /** Answers the TLS request (8 bytes) with an error message, as a server out of processes. */
    private void tlsRequestAnsweredWithAnError(
        java.io.DataInputStream in, java.io.DataOutputStream out) throws IOException {
      in.readFully(new byte[8]);
      write(
          out,
          'E',
          "SFATAL\0C53300\0Msorry, too many clients already\0\0"
              .getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    @Test
    void underPreferAnErrorAnsweringTheTlsRequestIsFollowedByAPlainConnection() throws Exception {
      try (java.net.ServerSocket server =
          listen(
              this::tlsRequestAnsweredWithAnError,
              (in, out) -> {
                readMessage(in, false); // a plain start-up message this time
                write(out, 'R', auth(0, ""));
                write(out, 'Z', new byte[] {'I'});
              })) {
        PgWireSettings prefer =
            settings(PgWireConnectionTest.url(server.getLocalPort(), "u", "pw", "&sslmode=prefer"));
        try (PgWireConnection c = PgWireConnection.open(prefer, "n")) {
          assertThat(c).isNotNull();
        }
      }
    }

    @Test
    void underRequireAnErrorAnsweringTheTlsRequestIsWorthAnotherTry() throws Exception {
      try (java.net.ServerSocket server = listen(this::tlsRequestAnsweredWithAnError)) {
        PgWireSettings require =
            settings(
                PgWireConnectionTest.url(server.getLocalPort(), "u", "pw", "&sslmode=require"));
        assertThatThrownBy(() -> PgWireConnection.open(require, "n"))
            .isInstanceOf(SQLException.class)
            .hasMessageContaining("error")
            .extracting(e -> ((SQLException) e).getSQLState())
            .isEqualTo("08001");
      }
    }

    @Test
    void aServerThatSkipsItsScramProofIsRefused() throws Exception {
      try (java.net.ServerSocket server =
          listen(
              (in, out) -> {
                scramUntilClientFinal(in, out);
                write(out, 'R', auth(0, "")); // "authenticated", without the server's signature
                write(out, 'Z', new byte[] {'I'});
              })) {
        assertThatThrownBy(() -> PgWireConnection.open(settingsFor(server), "n"))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("SCRAM authentication failed")
            .hasMessageContaining("before proving it knows the password")
            .hasMessageNotContaining("pw");
      }
    }

    @Test
    void aServerThatDeclaresItselfReadyMidScramIsRefused() throws Exception {
      try (java.net.ServerSocket server =
          listen(
              (in, out) -> {
                scramUntilClientFinal(in, out);
                write(out, 'Z', new byte[] {'I'}); // ready, with neither proof nor success
              })) {
        assertThatThrownBy(() -> PgWireConnection.open(settingsFor(server), "n"))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("before proving it knows the password");
      }
    }

    @Test
    void aServerWithAWrongScramSignatureIsRefused() throws Exception {
      try (java.net.ServerSocket server =
          listen(
              (in, out) -> {
                scramUntilClientFinal(in, out);
                write(
                    out,
                    'R',
                    auth(12, "v=" + java.util.Base64.getEncoder().encodeToString(new byte[32])));
                write(out, 'R', auth(0, ""));
                write(out, 'Z', new byte[] {'I'});
              })) {
        assertThatThrownBy(() -> PgWireConnection.open(settingsFor(server), "n"))
            .isInstanceOf(RedlockNonTransientException.class)
            .hasMessageContaining("SCRAM signature is wrong");
      }
    }

    @Test
    void aTimeoutInTheMiddleOfAMessageConsumesNothing() throws Exception {
      java.util.concurrent.CountDownLatch rest = new java.util.concurrent.CountDownLatch(1);
      try (java.net.ServerSocket server =
          listen(
              (in, out) -> {
                readMessage(in, false);
                write(out, 'R', auth(0, "")); // no password asked
                write(out, 'Z', new byte[] {'I'});
                for (int i = 0; i < 4; i++) {
                  readMessage(in, true); // Parse, Bind, Execute, Sync
                }
                write(out, '1', new byte[0]);
                write(out, '2', new byte[0]);
                // a DataRow with one 4-byte column, 42, sent in two halves
                byte[] row =
                    java.nio.ByteBuffer.allocate(15)
                        .put((byte) 'D')
                        .putInt(14)
                        .putShort((short) 1)
                        .putInt(4)
                        .putInt(42)
                        .array();
                out.write(row, 0, 7);
                out.flush();
                rest.await(10, TimeUnit.SECONDS);
                out.write(row, 7, row.length - 7);
                write(out, 'C', "SELECT 1\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                write(out, 'Z', new byte[] {'I'});
              })) {
        try (PgWireConnection c = PgWireConnection.open(settingsFor(server), "n")) {
          c.parse(0, "SELECT 42");
          c.bind(0, 0);
          c.executeAndSync();
          c.flush();
          long soon = System.nanoTime() + Duration.ofMillis(300).toNanos();
          assertThat(c.next(soon)).isEqualTo('1');
          assertThat(c.next(soon)).isEqualTo('2');
          assertThat(c.next(soon)).as("half a message: not there yet").isEqualTo(-1);
          assertThat(c.next(System.nanoTime())).as("still half").isEqualTo(-1);
          rest.countDown();
          long later = System.nanoTime() + TIMEOUT.toNanos();
          assertThat(c.next(later)).isEqualTo('D');
          assertThat(c.bodyShort(0)).isEqualTo(1);
          assertThat(c.bodyInt(2)).isEqualTo(4);
          assertThat(c.bodyInt(6)).isEqualTo(42);
          assertThat(c.next(later)).isEqualTo('C');
          assertThat(c.commandCount()).isEqualTo(1);
          assertThat(c.next(later)).isEqualTo('Z');
        }
      }
    }
  }
}
