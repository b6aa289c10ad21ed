package io.redlock.redis.internal;

import java.net.SocketTimeoutException;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.PushConsumerChain;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.util.RedisInputStream;

/**
 * A Jedis connection that can send a command without reading its reply, and wait for the reply
 * without consuming it. This is what lets one thread write to every node first and read the answers
 * afterwards.
 *
 * <p>Jedis marks a connection broken when a read times out inside its protocol parser, so the wait
 * for a reply is done outside the parser: {@link RedisInputStream#peek(byte)} fills the buffer
 * under a socket timeout without consuming anything, and a timeout there leaves the connection
 * usable, so a late reply can still be read from it.
 */
final class MuxConnection extends Connection {
  private RedisInputStream input;
  private boolean capturing;

  private MuxConnection(Connection.Builder builder) {
    super(builder);
  }

  /** Builds {@link MuxConnection}s for a Jedis {@code ConnectionFactory}. */
  static final class Builder extends Connection.Builder {
    @Override
    protected Connection createConnection() {
      return new MuxConnection(this);
    }
  }

  /** Writes and flushes a command; does not read. */
  void send(CommandArguments command) {
    sendCommand(command);
    flush();
  }

  /**
   * Waits up to {@code millis} for the first byte of a reply without consuming it.
   *
   * @return true if a reply (or its start) is there; false if none came in time, in which case the
   *     connection stays usable
   * @throws JedisConnectionException if the connection failed or was closed by the server
   */
  boolean awaitReply(int millis) {
    RedisInputStream in = input();
    try {
      if (in.available() > 0) {
        return true;
      }
    } catch (java.io.IOException e) {
      setBroken();
      throw new JedisConnectionException(e);
    }
    // Even with no time left, allow 1 ms: with TLS, bytes that have arrived may still need
    // decrypting before available() counts them.
    setSoTimeout(Math.max(1, millis));
    try {
      in.peek((byte) 0);
      return true;
    } catch (JedisConnectionException e) {
      if (e.getCause() instanceof SocketTimeoutException) {
        return false; // nothing was consumed: the reply can be awaited again
      }
      setBroken();
      throw e;
    }
  }

  /** Reads one reply whose first byte is already there, allowing {@code millis} for the rest. */
  Object readReply(int millis) {
    setSoTimeout(Math.max(1, millis));
    return getOne();
  }

  /** Skips the system call when the socket already has this timeout (the common case). */
  @Override
  public void setSoTimeout(int soTimeout) {
    if (!isConnected() || soTimeout != getSoTimeout()) {
      super.setSoTimeout(soTimeout);
    }
  }

  /** The connection's current input stream, obtained without reading from the socket. */
  private RedisInputStream input() {
    capturing = true;
    try {
      readProtocolWithCheckingBroken(); // throws if the connection is broken
    } finally {
      capturing = false;
    }
    return input;
  }

  @Override
  protected Object protocolRead(RedisInputStream is, PushConsumerChain pushConsumers) {
    input = is;
    return capturing ? null : super.protocolRead(is, pushConsumers);
  }
}
