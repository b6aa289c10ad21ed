package io.redlock.testservers;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Asks a MongoDB server (real or stand-in) what it is, over one plain TCP connection, without a
 * MongoDB driver: test-servers must not depend on the driver that the backend under test brings.
 * Sends {@code buildInfo} and {@code hello} (or the legacy {@code isMaster}) as OP_MSG, which every
 * MongoDB since 3.6 answers before authentication. Only the few BSON types these two answers need
 * are decoded; the rest is skipped.
 */
final class MongoWireProbe {
  private static final int OP_MSG = 2013;
  private static final int MAX_REPLY_BYTES = 16 * 1024 * 1024;
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

  private MongoWireProbe() {}

  /** The server answered, with an error. */
  private static final class CommandFailed extends IOException {
    CommandFailed(String message) {
      super(message);
    }
  }

  /** What the server said about itself. */
  record Identity(String version, int maxWireVersion, String replicaSet) {
    /** E.g. {@code MongoDB 7.0.14 (wire 21, replica set rs0)}. */
    String describe() {
      return "MongoDB "
          + version
          + " (wire "
          + maxWireVersion
          + (replicaSet == null ? ", standalone)" : ", replica set " + replicaSet + ")");
    }
  }

  /**
   * Connects to {@code host:port}, sends {@code buildInfo} and {@code hello}, and returns the
   * answers.
   *
   * @throws IOException if the server cannot be reached or answers something unexpected
   */
  static Identity identify(String host, int port, Duration timeout) throws IOException {
    int millis = (int) Math.max(1, timeout.toMillis());
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(host, port), millis);
      socket.setSoTimeout(millis);
      Map<String, Object> buildInfo = command(socket, 1, "buildInfo");
      Map<String, Object> hello;
      try {
        // the legacy name first: every server knows it (the stand-in knows only this one)
        hello = command(socket, 2, "isMaster");
      } catch (CommandFailed e) {
        hello = command(socket, 3, "hello");
      }
      Object version = buildInfo.get("version");
      if (!(version instanceof String)) {
        throw new IOException(
            "buildInfo of " + host + ":" + port + " has no version: " + buildInfo);
      }
      Object wire = hello.get("maxWireVersion");
      Object setName = hello.get("setName");
      return new Identity(
          (String) version,
          wire instanceof Number n ? n.intValue() : -1,
          setName instanceof String s ? s : null);
    }
  }

  private static Map<String, Object> command(Socket socket, int requestId, String name)
      throws IOException {
    byte[] body = bsonDocument(name, "admin");
    ByteBuffer request = ByteBuffer.allocate(16 + 4 + 1 + body.length).order(LE);
    request.putInt(request.capacity()).putInt(requestId).putInt(0).putInt(OP_MSG);
    request.putInt(0); // flagBits
    request.put((byte) 0); // section kind 0: the command document
    request.put(body);
    OutputStream out = socket.getOutputStream();
    out.write(request.array());
    out.flush();
    return readReply(socket.getInputStream(), name);
  }

  /** {@code {<command>: 1, $db: <db>}} in BSON. */
  private static byte[] bsonDocument(String command, String db) {
    byte[] commandName = cString(command);
    byte[] dbKey = cString("$db");
    byte[] dbValue = db.getBytes(StandardCharsets.UTF_8);
    int length = 4 + (1 + commandName.length + 4) + (1 + dbKey.length + 4 + dbValue.length + 1) + 1;
    ByteBuffer doc = ByteBuffer.allocate(length).order(LE);
    doc.putInt(length);
    doc.put((byte) 0x10).put(commandName).putInt(1); // int32
    doc.put((byte) 0x02).put(dbKey).putInt(dbValue.length + 1).put(dbValue).put((byte) 0);
    doc.put((byte) 0);
    return doc.array();
  }

  private static byte[] cString(String s) {
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    return Arrays.copyOf(bytes, bytes.length + 1);
  }

  private static Map<String, Object> readReply(InputStream in, String name) throws IOException {
    DataInputStream data = new DataInputStream(in);
    byte[] lengthBytes = new byte[4];
    data.readFully(lengthBytes);
    int length = ByteBuffer.wrap(lengthBytes).order(LE).getInt();
    if (length < 21 || length > MAX_REPLY_BYTES) {
      throw new IOException("implausible reply length " + length + " to " + name);
    }
    byte[] rest = new byte[length - 4];
    data.readFully(rest);
    ByteBuffer reply = ByteBuffer.wrap(rest).order(LE);
    reply.position(8); // requestID, responseTo
    int opCode = reply.getInt();
    if (opCode != OP_MSG) {
      throw new IOException("reply to " + name + " has op code " + opCode + ", not OP_MSG");
    }
    reply.getInt(); // flagBits
    byte kind = reply.get();
    if (kind != 0) {
      throw new IOException("reply to " + name + " starts with section kind " + kind);
    }
    Map<String, Object> document = topLevelFields(reply);
    Object ok = document.get("ok");
    if (!(ok instanceof Number n) || n.doubleValue() != 1.0) {
      throw new CommandFailed(name + " failed: " + document);
    }
    return document;
  }

  /**
   * The top-level fields of one BSON document: strings, numbers and booleans by value, anything
   * else skipped (recorded as its BSON type number).
   */
  private static Map<String, Object> topLevelFields(ByteBuffer in) throws IOException {
    try {
      int start = in.position();
      int end = start + in.getInt();
      Map<String, Object> out = new LinkedHashMap<>();
      while (in.position() < end - 1) {
        byte type = in.get();
        String key = readCString(in);
        switch (type) {
          case 0x01 -> out.put(key, in.getDouble());
          case 0x02 -> {
            int size = in.getInt();
            byte[] bytes = new byte[size - 1];
            in.get(bytes).get();
            out.put(key, new String(bytes, StandardCharsets.UTF_8));
          }
          case 0x03, 0x04 -> skip(in, in.getInt(in.position()), key);
          case 0x05 -> skip(in, 4 + 1 + in.getInt(in.position()), key);
          case 0x07 -> skip(in, 12, key);
          case 0x08 -> out.put(key, in.get() != 0);
          case 0x09, 0x11, 0x12 -> out.put(key, in.getLong());
          case 0x0A, 0x7F, (byte) 0xFF -> out.put(key, null);
          case 0x0B -> {
            readCString(in);
            readCString(in);
          }
          case 0x10 -> out.put(key, in.getInt());
          case 0x13 -> skip(in, 16, key);
          default -> throw new IOException("unexpected BSON type " + type + " for field " + key);
        }
      }
      return out;
    } catch (java.nio.BufferUnderflowException | IllegalArgumentException e) {
      throw new IOException("malformed BSON in the server's reply: " + e, e);
    }
  }

  private static void skip(ByteBuffer in, int bytes, String key) throws IOException {
    if (bytes < 0 || bytes > in.remaining()) {
      throw new IOException("malformed BSON value for field " + key);
    }
    in.position(in.position() + bytes);
  }

  private static String readCString(ByteBuffer in) {
    int start = in.position();
    while (in.get() != 0) {
      // scan to the terminating zero
    }
    return new String(in.array(), start, in.position() - start - 1, StandardCharsets.UTF_8);
  }
}
