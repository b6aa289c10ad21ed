package io.redlock.redis.internal;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.Reply;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * The reply to one command on one pooled connection. {@link #await} reads it on the caller's thread
 * within the caller's timeout; a timeout leaves the connection untouched so that {@link #abandon}
 * can hand it to a late reader, which reads the answer within the node's socket timeout. Either way
 * the connection goes back to the pool (or is closed if its state is unknown) exactly once.
 *
 * <p>A command that waits for a connection (none was idle) is sent by the node's background thread
 * once it has one, unless the reply was abandoned first: then it is never sent ({@link
 * #claimSend}).
 */
final class PendingReply<T> implements Reply<T>, MuxPool.Waiter {
  private static final Logger log = LoggerFactory.getLogger(PendingReply.class);

  private final RedisNode node;
  private final RedisNode.Operation<T> operation;
  private final CommandArguments command;

  /** The connection the command went out on, when it was sent before the reply was made. */
  private final MuxConnection sentNow;

  /** Otherwise: the connection, once a background thread has sent the command on it. */
  private final CompletableFuture<MuxConnection> sent;

  private static final int WAITING = 0;
  private static final int SENDING = 1;
  private static final int DROPPED = 2;

  /** For a command sent later: whether it may still be sent, is being sent, or was dropped. */
  private final AtomicInteger sendState = new AtomicInteger(WAITING);

  /**
   * Guards the fields below. Not a monitor: {@link #await} blocks on the socket while holding it,
   * and a virtual thread blocked under a monitor would pin its carrier (Java 21 to 23).
   */
  private final java.util.concurrent.locks.ReentrantLock lock =
      new java.util.concurrent.locks.ReentrantLock();

  private boolean finished;
  private T answer;
  private RuntimeException failure;
  private boolean abandoned;
  private boolean fellBack;

  /** A command already sent on {@code connection} (the common case: an idle one was at hand). */
  PendingReply(
      RedisNode node,
      RedisNode.Operation<T> operation,
      CommandArguments command,
      MuxConnection connection) {
    this.node = node;
    this.operation = operation;
    this.command = command;
    this.sentNow = connection;
    this.sent = null;
  }

  /** A command that a background thread sends once it has a connection. */
  PendingReply(
      RedisNode node,
      RedisNode.Operation<T> operation,
      CommandArguments command,
      CompletableFuture<MuxConnection> sent) {
    this.node = node;
    this.operation = operation;
    this.command = command;
    this.sentNow = null;
    this.sent = sent;
  }

  @Override
  public T await(Duration timeout) {
    lock.lock();
    try {
      return awaitLocked(timeout);
    } finally {
      lock.unlock();
    }
  }

  private T awaitLocked(Duration timeout) {
    if (abandoned) {
      throw new IllegalStateException(node.name() + ": this reply was abandoned");
    }
    if (finished) {
      return outcome();
    }
    long deadline = System.nanoTime() + Math.max(0, timeout.toNanos());
    MuxConnection connection = sentNow;
    if (connection == null) {
      try {
        if (sent.isDone() || timeout.isZero() || timeout.isNegative()) {
          if (!sent.isDone()) {
            throw waitedForConnection(timeout);
          }
          connection = sent.get();
        } else {
          connection = sent.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        }
      } catch (TimeoutException e) {
        throw waitedForConnection(timeout);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new RedlockTransientException(
            node.name(), "interrupted while waiting for the node", e);
      } catch (ExecutionException e) {
        Throwable cause = e.getCause() == null ? e : e.getCause();
        if (cause instanceof JedisConnectionException) {
          node.connectionFailed();
        }
        return finish(null, node.errors().translate(cause, operation.description()));
      }
    }
    try {
      return finish(read(connection, deadline), null);
    } catch (NodeTimeoutException notYet) {
      throw new NodeTimeoutException(node.name(), timeout);
    } catch (RedlockException failed) {
      return finish(null, failed);
    }
  }

  /** The call timed out still waiting for a connection: every one was busy. */
  private NodeTimeoutException waitedForConnection(Duration timeout) {
    return new NodeTimeoutException(
        node.name(),
        timeout,
        "no connection came free within "
            + timeout.toMillis()
            + " ms: all "
            + node.settings().poolSize()
            + " were busy with calls the node had not answered; check that the node is not"
            + " stalled, or raise poolSize if the load needs more");
  }

  private T finish(T value, RuntimeException failed) {
    finished = true;
    answer = value;
    failure = failed;
    return outcome();
  }

  private T outcome() {
    if (failure != null) {
      throw failure;
    }
    return answer;
  }

  /**
   * Reads the reply until {@code deadline}. On an answer or a failure the connection has been given
   * back (or closed); on {@link NodeTimeoutException} it is still held and usable.
   */
  private T read(MuxConnection connection, long deadline) {
    while (true) {
      boolean ready;
      try {
        ready = connection.awaitReply(remainingMillis(deadline));
      } catch (RuntimeException e) {
        throw broken(connection, e);
      }
      if (!ready) {
        throw new NodeTimeoutException(node.name(), Duration.ZERO);
      }
      Object reply;
      try {
        // The rest of a reply follows its first byte at once; a stall is bounded by the timeout
        // in force (see readReply) or else the socket timeout.
        reply = connection.readReply(node.socketTimeoutMillis());
      } catch (JedisNoScriptException e) {
        if (operation.fallbackScript() != null && !fellBack) {
          // The server lost its script cache (restart, SCRIPT FLUSH): EVAL sends the script and
          // caches it again, on the same connection.
          fellBack = true;
          try {
            connection.send(RedisNode.evalInsteadOf(command, operation.fallbackScript()));
          } catch (RuntimeException sendFailed) {
            throw broken(connection, sendFailed);
          }
          continue;
        }
        node.giveBack(connection);
        throw node.errors().translate(e, operation.description());
      } catch (JedisDataException e) {
        node.giveBack(connection); // an error reply leaves the connection in a clean state
        throw node.errors().translate(e, operation.description());
      } catch (RuntimeException e) {
        throw broken(connection, e);
      }
      try {
        T value = operation.parser().apply(reply);
        node.giveBack(connection);
        return value;
      } catch (RuntimeException e) {
        node.discard(connection); // an unexpected reply: do not trust the stream any more
        throw node.errors().translate(e, operation.description());
      }
    }
  }

  private RedlockException broken(MuxConnection connection, RuntimeException e) {
    node.discard(connection);
    node.connectionFailed();
    return node.errors().translate(e, operation.description());
  }

  private static int remainingMillis(long deadline) {
    long nanos = deadline - System.nanoTime();
    if (nanos <= 0) {
      return 0;
    }
    return (int)
        Math.min(Integer.MAX_VALUE, Math.max(1, TimeUnit.NANOSECONDS.toMillis(nanos + 999_999)));
  }

  /**
   * Whether the background thread may still send the command: false once the reply was abandoned.
   * Called before waiting for a connection, to skip an abandoned call cheaply.
   */
  boolean stillWanted() {
    return sendState.get() == WAITING || !operation.droppable();
  }

  /** Claims the sending of the command; false if the reply was abandoned (then do not send). */
  boolean claimSend() {
    return sendState.compareAndSet(WAITING, SENDING)
        || (!operation.droppable() && sendState.get() == WAITING);
  }

  /** A connection came for this waiting command: sends it, unless the reply was abandoned. */
  @Override
  public boolean serve(MuxConnection connection) {
    if (!claimSend()) {
      return false;
    }
    try {
      connection.send(command);
    } catch (RuntimeException e) {
      node.discard(connection);
      node.connectionFailed();
      sent.completeExceptionally(e);
      return true;
    }
    sent.complete(connection);
    return true;
  }

  /** No connection could be had: the reply fails with {@code failure}, if it still waits. */
  @Override
  public boolean fail(Exception failure) {
    if (!claimSend()) {
      return false;
    }
    sent.completeExceptionally(failure);
    return true;
  }

  @Override
  public void abandon(Consumer<? super T> ended) {
    lock.lock();
    try {
      abandonLocked(ended);
    } finally {
      lock.unlock();
    }
  }

  private void abandonLocked(Consumer<? super T> ended) {
    if (abandoned) {
      return;
    }
    abandoned = true;
    if (finished) {
      // the answer was read already and the connection is back in the pool
      ended.accept(failure == null ? answer : null);
      return;
    }
    if (sentNow != null) {
      readLateInBackground(sentNow, ended);
      return;
    }
    if (operation.droppable() && sendState.compareAndSet(WAITING, DROPPED)) {
      ended.accept(null); // never sent: there is no answer to wait for
      return;
    }
    sent.whenComplete(
        (connection, sendFailure) -> {
          if (connection == null) {
            ended.accept(null); // the send failed: there is no late answer
          } else {
            readLateInBackground(connection, ended);
          }
        });
  }

  private void readLateInBackground(MuxConnection connection, Consumer<? super T> ended) {
    Runnable reader = () -> readLate(connection, ended);
    if (!node.readLate(reader)) {
      node.discard(connection); // the node is closed: nobody will read the answer
      ended.accept(null);
    }
  }

  private void readLate(MuxConnection connection, Consumer<? super T> ended) {
    T value;
    try {
      value = read(connection, System.nanoTime() + node.socketTimeoutMillis() * 1_000_000L);
    } catch (NodeTimeoutException e) {
      node.discard(connection); // still no answer: the connection's state is unknown for good
      log.debug(
          "{}: no late reply to {} within the socket timeout",
          node.name(),
          operation.description());
      ended.accept(null);
      return;
    } catch (RuntimeException e) {
      log.debug(
          "{}: late reply to {} failed: {}", node.name(), operation.description(), e.toString());
      ended.accept(null); // read() gave back or closed the connection
      return;
    }
    try {
      ended.accept(value);
    } catch (RuntimeException e) {
      log.warn(
          "{}: the handler of a late reply to {} failed", node.name(), operation.description(), e);
    }
  }
}
