package io.redlock.tck.selftest;

import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.NodeUri;
import io.redlock.spi.Reply;
import io.redlock.spi.support.LockNodeArguments;
import io.redlock.spi.support.Replies;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A node whose every operation opens a real TCP connection to {@code 127.0.0.1:port} and waits for
 * the store to speak first. It is only ever pointed at a closed port or a silent listener, where it
 * shows how a backend reports (or, in the broken modes, fails to report) a node it cannot reach.
 */
final class TcpProbeNode implements LockNode {

  /** How the node deals with a connection that fails. */
  enum Mode {
    /** Correct: connect and read timeouts, failures are RedlockTransientExceptions. */
    REPORTS_FAILURE,
    /** Broken: a connection error is answered as "held" / false. */
    ANSWERS_FALSE,
    /** Broken: no read timeout, so a silent peer blocks the call forever. */
    NO_READ_TIMEOUT
  }

  private static final int TIMEOUT_MILLIS = 1000;

  private final int port;
  private final Mode mode;
  private final String name;
  private final ExecutorService executor;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean closed = new AtomicBoolean();

  /**
   * @param port where the node connects, on loopback
   * @param mode how failures are handled
   * @param password put in the configured URI, to check that it never shows
   */
  TcpProbeNode(int port, Mode mode, String password) {
    this.port = port;
    this.mode = mode;
    this.name = NodeUri.parse("tcp://tck:" + password + "@127.0.0.1:" + port).redacted();
    this.executor =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "tcp-probe-" + port);
              t.setDaemon(true);
              return t;
            });
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public NodeCapabilities capabilities() {
    return NodeCapabilities.millisecondPrecision().withClock();
  }

  /** Like the lock operations: this fake store never answers, so no time is ever read. */
  @Override
  public Reply<java.time.Instant> serverTime() {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
    return Replies.supplyAsync(
        () -> {
          ask(); // throws, or (the ANSWERS_FALSE defect) answers nonsense
          return java.time.Instant.EPOCH;
        },
        executor,
        name);
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    return Replies.supplyAsync(() -> AcquireResult.of(ask()), executor, name);
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    check(key, token);
    return Replies.supplyAsync(this::ask, executor, name);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    check(key, token);
    LockNodeArguments.requireTtl(ttl, capabilities());
    return Replies.supplyAsync(this::ask, executor, name);
  }

  /** One exchange with the store. This fake store never answers, so no answer is ever true. */
  private boolean ask() {
    try (Socket socket = new Socket()) {
      open.add(socket);
      try {
        socket.connect(new InetSocketAddress("127.0.0.1", port), TIMEOUT_MILLIS);
        socket.setSoTimeout(mode == Mode.NO_READ_TIMEOUT ? 0 : TIMEOUT_MILLIS);
        InputStream in = socket.getInputStream();
        int first = in.read();
        throw new RedlockNonTransientException(
            name, "the peer is not a lock store (it sent byte " + first + ")", null);
      } finally {
        open.remove(socket);
      }
    } catch (IOException e) {
      if (mode == Mode.ANSWERS_FALSE) {
        return false;
      }
      throw new RedlockTransientException(
          name, "cannot reach the node (" + e.getMessage() + "); check that it is running", e);
    }
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      // Closing the sockets ends calls blocked in read (the NO_READ_TIMEOUT mode).
      open.forEach(
          s -> {
            try {
              s.close();
            } catch (IOException ignored) {
              // closing anyway
            }
          });
      executor.shutdownNow();
    }
  }

  @Override
  public String toString() {
    return name;
  }

  private void check(String key, String token) {
    if (closed.get()) {
      throw new IllegalStateException(name + " is closed");
    }
    LockNodeArguments.requireKey(key);
    LockNodeArguments.requireToken(token);
  }
}
