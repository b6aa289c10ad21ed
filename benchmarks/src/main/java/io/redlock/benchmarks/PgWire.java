package io.redlock.benchmarks;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * A bare PostgreSQL client speaking the v3 wire protocol over a blocking socket, for the floors
 * only: it can send a statement without waiting for its answer, which JDBC cannot, so one thread
 * can ask several servers at once and read the answers after (as the Redis floors do). It knows
 * just enough for that: password authentication (SCRAM-SHA-256, MD5 or clear text, as the benchmark
 * servers ask), named statements prepared once, binary parameters, and results that are a row count
 * or one boolean. No TLS, no cancel, no notifications; an error answer throws.
 */
final class PgWire implements AutoCloseable {
  static final int BYTEA = 17;
  static final int INT8 = 20;
  static final int TEXT = 25;

  private final Socket socket;
  private final DataOutputStream out;
  private final DataInputStream in;
  private byte[] buffer = new byte[256];

  /** Connects with the host, port, database, user and password of a benchmark JDBC URL. */
  PgWire(String jdbcUrl) {
    URI uri = URI.create(jdbcUrl.substring("jdbc:".length()));
    Map<String, String> query = new HashMap<>();
    for (String pair : uri.getRawQuery().split("&")) {
      int eq = pair.indexOf('=');
      query.put(
          pair.substring(0, eq), URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
    }
    try {
      socket = new Socket();
      socket.setTcpNoDelay(true);
      socket.setSoTimeout(2_000);
      socket.connect(new InetSocketAddress(uri.getHost(), uri.getPort()), 2_000);
      out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream(), 8192));
      in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), 8192));
      startup(query.get("user"), query.getOrDefault("password", ""), uri.getPath().substring(1));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot connect the wire floor to " + uri.getHost(), e);
    }
  }

  private void startup(String user, String password, String database) throws IOException {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    DataOutputStream b = new DataOutputStream(body);
    b.writeInt(196_608); // protocol 3.0
    for (String s : new String[] {"user", user, "database", database}) {
      cstring(b, s);
    }
    b.writeByte(0);
    out.writeInt(body.size() + 4);
    body.writeTo(out);
    out.flush();
    Scram scram = null;
    while (true) {
      int type = in.readByte();
      int length = in.readInt() - 4;
      byte[] message = new byte[length];
      in.readFully(message);
      switch (type) {
        case 'R' -> {
          int code =
              ((message[0] & 255) << 24)
                  | ((message[1] & 255) << 16)
                  | ((message[2] & 255) << 8)
                  | (message[3] & 255);
          switch (code) {
            case 0, 12 -> {} // ok; SCRAM's final message (not verified: a benchmark's own server)
            case 3 -> passwordMessage((password + "\0").getBytes(StandardCharsets.UTF_8));
            case 5 -> passwordMessage(md5Password(user, password, message));
            case 10 -> {
              scram = new Scram(password);
              byte[] first = scram.clientFirst();
              ByteArrayOutputStream sasl = new ByteArrayOutputStream();
              DataOutputStream s = new DataOutputStream(sasl);
              cstring(s, "SCRAM-SHA-256");
              s.writeInt(first.length);
              s.write(first);
              out.writeByte('p');
              out.writeInt(sasl.size() + 4);
              sasl.writeTo(out);
              out.flush();
            }
            case 11 -> {
              if (scram == null) {
                throw new IllegalStateException("SCRAM continuation without a start");
              }
              passwordMessage(
                  scram.clientFinal(new String(message, 4, length - 4, StandardCharsets.UTF_8)));
            }
            default -> throw new IllegalStateException("unsupported authentication " + code);
          }
        }
        case 'E' ->
            throw new IllegalStateException("PostgreSQL refused: " + error(message, length));
        case 'Z' -> {
          return;
        }
        default -> {} // parameter status, backend key data, notices
      }
    }
  }

  private void passwordMessage(byte[] data) throws IOException {
    out.writeByte('p');
    out.writeInt(data.length + 4);
    out.write(data);
    out.flush();
  }

  private static byte[] md5Password(String user, String password, byte[] message) {
    try {
      MessageDigest md5 = MessageDigest.getInstance("MD5");
      String inner =
          HexFormat.of().formatHex(md5.digest((password + user).getBytes(StandardCharsets.UTF_8)));
      md5.update(inner.getBytes(StandardCharsets.US_ASCII));
      md5.update(message, 4, 4); // the salt
      return ("md5" + HexFormat.of().formatHex(md5.digest()) + "\0")
          .getBytes(StandardCharsets.US_ASCII);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** SCRAM-SHA-256 without channel binding (RFC 5802 / 7677), as PostgreSQL runs it. */
  private static final class Scram {
    private final String password;
    private final String clientFirstBare;

    Scram(String password) {
      this.password = password;
      byte[] nonce = new byte[18];
      new SecureRandom().nextBytes(nonce);
      this.clientFirstBare = "n=,r=" + Base64.getEncoder().encodeToString(nonce);
    }

    byte[] clientFirst() {
      return ("n,," + clientFirstBare).getBytes(StandardCharsets.US_ASCII);
    }

    byte[] clientFinal(String serverFirst) {
      Map<String, String> fields = new HashMap<>();
      for (String field : serverFirst.split(",")) {
        fields.put(field.substring(0, 1), field.substring(2));
      }
      try {
        byte[] salted =
            SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256")
                .generateSecret(
                    new PBEKeySpec(
                        password.toCharArray(),
                        Base64.getDecoder().decode(fields.get("s")),
                        Integer.parseInt(fields.get("i")),
                        256))
                .getEncoded();
        byte[] clientKey = hmac(salted, "Client Key");
        byte[] storedKey = MessageDigest.getInstance("SHA-256").digest(clientKey);
        String withoutProof = "c=biws,r=" + fields.get("r");
        byte[] signature =
            hmac(storedKey, clientFirstBare + "," + serverFirst + "," + withoutProof);
        byte[] proof = new byte[clientKey.length];
        for (int i = 0; i < proof.length; i++) {
          proof[i] = (byte) (clientKey[i] ^ signature[i]);
        }
        return (withoutProof + ",p=" + Base64.getEncoder().encodeToString(proof))
            .getBytes(StandardCharsets.US_ASCII);
      } catch (GeneralSecurityException e) {
        throw new IllegalStateException(e);
      }
    }

    private static byte[] hmac(byte[] key, String message) throws GeneralSecurityException {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(message.getBytes(StandardCharsets.US_ASCII));
    }
  }

  /** Prepares a named statement with the given parameter type OIDs, and waits for it. */
  void prepare(String name, String sql, int... parameterTypes) {
    try {
      byte[] n = name.getBytes(StandardCharsets.US_ASCII);
      byte[] q = sql.getBytes(StandardCharsets.UTF_8);
      out.writeByte('P');
      out.writeInt(4 + n.length + 1 + q.length + 1 + 2 + 4 * parameterTypes.length);
      out.write(n);
      out.writeByte(0);
      out.write(q);
      out.writeByte(0);
      out.writeShort(parameterTypes.length);
      for (int oid : parameterTypes) {
        out.writeInt(oid);
      }
      sync();
      flush();
      result();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Buffers Bind, Execute and Sync of a prepared statement with binary parameters ({@code byte[]}
   * sent as is, {@code String} as UTF-8, {@code Long} as 8 bytes); {@link #flush} sends them.
   */
  void send(String name, Object... parameters) {
    try {
      byte[] n = name.getBytes(StandardCharsets.US_ASCII);
      int length = 4 + 1 + n.length + 1 + 2 + 2 + 2 + 2 + 2;
      byte[][] values = new byte[parameters.length][];
      for (int i = 0; i < parameters.length; i++) {
        Object p = parameters[i];
        values[i] =
            p instanceof byte[] bytes
                ? bytes
                : p instanceof Long l
                    ? java.nio.ByteBuffer.allocate(8).putLong(l).array()
                    : ((String) p).getBytes(StandardCharsets.UTF_8);
        length += 4 + values[i].length;
      }
      out.writeByte('B');
      out.writeInt(length);
      out.writeByte(0); // unnamed portal
      out.write(n);
      out.writeByte(0);
      out.writeShort(1); // one format code for all parameters:
      out.writeShort(1); // binary
      out.writeShort(values.length);
      for (byte[] v : values) {
        out.writeInt(v.length);
        out.write(v);
      }
      out.writeShort(1); // one format code for all result columns:
      out.writeShort(1); // binary
      out.writeByte('E');
      out.writeInt(4 + 1 + 4);
      out.writeByte(0);
      out.writeInt(0);
      sync();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void sync() throws IOException {
    out.writeByte('S');
    out.writeInt(4);
  }

  void flush() {
    try {
      out.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Reads one statement's answer up to ReadyForQuery: the row count of an INSERT, UPDATE or DELETE,
   * or for a query 1 if its first row's first column is true, else 0.
   */
  int result() {
    try {
      int result = 0;
      boolean row = false;
      while (true) {
        int type = in.readByte();
        int length = in.readInt() - 4;
        if (buffer.length < length) {
          buffer = new byte[length];
        }
        in.readFully(buffer, 0, length);
        switch (type) {
          case 'D' -> {
            if (!row) {
              row = true;
              // column count (2 bytes), first column's length (4 bytes), then a binary boolean
              result = length >= 7 && buffer[6] == 1 ? 1 : 0;
            }
          }
          case 'C' -> {
            if (!row) {
              int space = length - 2;
              while (space >= 0 && buffer[space] != ' ') {
                space--;
              }
              result =
                  Integer.parseInt(
                      new String(buffer, space + 1, length - 2 - space, StandardCharsets.US_ASCII));
            }
          }
          case 'E' -> throw new IllegalStateException("PostgreSQL error: " + error(buffer, length));
          case 'Z' -> {
            return result;
          }
          default -> {} // ParseComplete, BindComplete, notices
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String error(byte[] message, int length) {
    StringBuilder sb = new StringBuilder();
    int i = 0;
    while (i < length && message[i] != 0) {
      char field = (char) message[i++];
      int start = i;
      while (i < length && message[i] != 0) {
        i++;
      }
      if (field == 'C' || field == 'M') {
        sb.append(field == 'C' ? "[" : " ")
            .append(new String(message, start, i - start, StandardCharsets.UTF_8))
            .append(field == 'C' ? "]" : "");
      }
      i++;
    }
    return sb.toString();
  }

  private static void cstring(DataOutputStream out, String s) throws IOException {
    out.write(s.getBytes(StandardCharsets.UTF_8));
    out.writeByte(0);
  }

  @Override
  public void close() {
    try {
      out.writeByte('X');
      out.writeInt(4);
      out.flush();
      socket.close();
    } catch (IOException e) {
      // closing anyway
    }
  }
}
