package io.redlock.redis.internal;

import java.net.SocketTimeoutException;
import java.util.function.Consumer;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.JedisClientConfig;
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
  /** The least time allowed for the rest of a reply once its first byte is there. */
  static final int TAIL_MILLIS = 10;

  private RedisInputStream input;
  private boolean capturing;

  /** When this connection was last given back to its {@link MuxPool}, from nanoTime. */
  long idleSince;

  /** Runs once the connection is set up (authenticated, database selected), before any use. */
  private final Consumer<MuxConnection> onConnect;

  private MuxConnection(Builder builder) {
    super(builder);
    this.onConnect = builder.onConnect;
  }

  /** Builds {@link MuxConnection}s for a Jedis {@code ConnectionFactory}. */
  static final class Builder extends Connection.Builder {
    private Consumer<MuxConnection> onConnect;

    /**
     * Runs {@code hook} on every new connection once it is set up, before it is used; an exception
     * from it fails the connection. Used to read the server's incarnation on every connection.
     */
    Builder onConnect(Consumer<MuxConnection> hook) {
      this.onConnect = hook;
      return this;
    }

    @Override
    protected Connection createConnection() {
      return new MuxConnection(this);
    }
  }

  @Override
  protected void initializeFromClientConfig(JedisClientConfig config) {
    super.initializeFromClientConfig(config);
    if (onConnect != null) {
      try {
        onConnect.accept(this);
      } catch (RuntimeException e) {
        try {
          disconnect(); // the pool never sees this connection: close it here
        } catch (RuntimeException ignored) {
          // the socket is gone either way
        }
        throw e;
      }
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
    // No available() check first: it is a system call per reply, and a timed peek returns at once
    // when the reply is buffered or has arrived. Even with no time left, allow 1 ms: with TLS,
    // bytes that have arrived may still need decrypting before they can be peeked.
    int wanted = Math.max(1, millis);
    int current = getSoTimeout();
    // Changing the socket's timeout costs two monitors and a boxed Integer per reply; the one in
    // force is kept when it is at most an eighth (plus 1 ms) longer than asked.
    if (current < wanted || current > wanted + (wanted >> 3) + 1) {
      setSoTimeout(wanted);
    }
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

  /**
   * Reads one reply whose first byte is already there. The rest follows at once, so the timeout
   * only bounds a pathological stall: the one in force is kept if it allows at least {@value
   * #TAIL_MILLIS} ms, else {@code millis} are allowed. (Setting it back and forth on every reply
   * was a measurable share of a lock cycle's CPU.)
   */
  Object readReply(int millis) {
    if (getSoTimeout() < TAIL_MILLIS) {
      setSoTimeout(Math.max(TAIL_MILLIS, millis));
    }
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
