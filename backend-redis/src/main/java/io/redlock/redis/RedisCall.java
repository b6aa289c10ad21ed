package io.redlock.redis;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.KeyHolder;
import io.redlock.spi.Reply;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Function;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.args.Rawable;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * One command on one pooled connection, and its reply: written at once on an idle connection, else
 * by the node's background thread once the pool lends one (unless abandoned first). {@link #await}
 * reads the reply within the caller's time; a reply given up closes its connection.
 */
final class RedisCall<T> implements Reply<T> {
  /** A kind of command: the script to EVAL after NOSCRIPT; droppable unless a release. */
  record Kind<T>(
      String description, String fallbackScript, Function<Object, T> parser, boolean droppable) {}

  static final Kind<AcquireResult> SET_NX_PX = new Kind<>("SET NX PX", null, RedisCall::ok, true);
  // a release is sent even when the engine stops waiting for it: see Reply.abandon
  static final Kind<Boolean> RELEASE =
      new Kind<>("compare-and-delete (EVALSHA)", Scripts.RELEASE, RedisCall::isOne, false);
  static final Kind<Boolean> EXTEND =
      new Kind<>("compare-and-extend (EVALSHA)", Scripts.EXTEND, RedisCall::isOne, true);
  static final Kind<AcquireResult> ACQUIRE_FENCED =
      new Kind<>("fenced acquire (EVALSHA)", Scripts.ACQUIRE_FENCED, RedisCall::fence, true);
  static final Kind<Boolean> RAISE_FENCE =
      new Kind<>("fence write-back (EVALSHA)", Scripts.RAISE_FENCE, RedisCall::isOne, true);
  static final Kind<Instant> TIME = new Kind<>("TIME", null, RedisCall::time, true);
  static final Kind<Optional<KeyHolder>> INSPECT =
      new Kind<>("inspect (EVAL of GET and PTTL)", null, RedisCall::holder, true);

  private static final byte[] OK = {'O', 'K'};

  private final RedisLockNode node;
  private final Kind<T> kind;
  private final CommandArguments command;

  /** The connection the command went out on, once it did. */
  private final CompletableFuture<Connection> sent;

  /** Claimed by whoever comes first: the sender (to send) or {@link #abandon} (to drop). */
  private final AtomicBoolean claimed = new AtomicBoolean();

  private boolean finished;
  private boolean abandoned;
  private boolean timedOut;
  private boolean fellBack;
  private T answer;
  private RuntimeException failure;

  RedisCall(RedisLockNode node, Kind<T> kind, CommandArguments command) {
    this.node = node;
    this.kind = kind;
    this.command = command;
    this.sent = new CompletableFuture<>();
    Connection idle = node.takeIdle();
    if (idle != null) {
      claimed.set(true);
      send(idle);
      return;
    }
    try {
      node.background.execute(this::borrowAndSend);
    } catch (RejectedExecutionException e) {
      sent.completeExceptionally(
          new RedlockTransientException(
              node.name(), "closed, or too many calls wait for a connection", null));
    }
  }

  /** On the node's background thread: waits for a pooled connection and sends on it. */
  private void borrowAndSend() {
    Connection c;
    try {
      c = node.pool.getResource();
    } catch (RuntimeException e) {
      sent.completeExceptionally(e);
      return;
    }
    if (claimed.compareAndSet(false, true)) {
      send(c);
    } else {
      c.close(); // dropped meanwhile: the connection goes back unused
      sent.complete(null);
    }
  }

  private void send(Connection c) {
    try {
      c.sendCommand(command);
      c.getMany(0); // flushes the command; reads nothing
      sent.complete(c);
    } catch (RuntimeException e) {
      node.discardInBackground(c);
      node.connectionFailed();
      sent.completeExceptionally(e);
    }
  }

  @Override
  public T await(Duration timeout) {
    if (abandoned) {
      throw new IllegalStateException(node.name() + ": this reply was abandoned");
    }
    if (finished) {
      return outcome();
    }
    if (timedOut) {
      throw new NodeTimeoutException(node.name(), timeout); // Jedis gave up on the connection
    }
    long nanos = Math.max(0, timeout.toNanos());
    long deadline = System.nanoTime() + nanos;
    Connection c;
    try {
      c = sent.get(nanos, TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new NodeTimeoutException(node.name(), timeout, node.errors.poolBusy(timeout));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RedlockTransientException(node.name(), "interrupted while waiting for it", e);
    } catch (ExecutionException e) {
      return finish(null, node.errors.translate(e.getCause(), kind.description()));
    }
    while (true) {
      Object reply;
      try {
        long left = deadline - System.nanoTime();
        // At least 1 ms even with no time left: a reply that has arrived may still need reading
        // (or, with TLS, decrypting). Changing the socket's timeout has a cost: keep the one in
        // force if it is at most an eighth (plus 1 ms) longer than asked.
        int wanted = (int) Math.min(Integer.MAX_VALUE, Math.max(1, (left + 999_999) / 1_000_000));
        int current = c.getSoTimeout();
        if (current < wanted || current > wanted + (wanted >> 3) + 1) {
          c.setSoTimeout(wanted);
        }
        reply = c.getOne();
      } catch (JedisNoScriptException e) {
        if (kind.fallbackScript() != null && !fellBack) {
          fellBack = true; // EVAL runs the script and caches it again
          c.sendCommand(evalInsteadOf());
          continue;
        }
        c.close();
        return finish(null, node.errors.translate(e, kind.description()));
      } catch (JedisDataException e) {
        c.close(); // an error reply leaves the connection clean
        return finish(null, node.errors.translate(e, kind.description()));
      } catch (JedisConnectionException e) {
        if (e.getCause() instanceof SocketTimeoutException) {
          timedOut = true; // the connection is closed when the reply is abandoned
          throw new NodeTimeoutException(node.name(), timeout);
        }
        node.discardInBackground(c);
        node.connectionFailed();
        return finish(null, node.errors.translate(e, kind.description()));
      }
      try {
        T value = kind.parser().apply(reply);
        c.close();
        return finish(value, null);
      } catch (RuntimeException e) {
        node.discardInBackground(c); // a reply no Redis gives: the stream is not to be trusted
        String shown =
            reply instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : "" + reply;
        return finish(
            null,
            new RedlockTransientException(
                node.name(),
                "unexpected reply to "
                    + kind.description()
                    + ": '"
                    + node.errors.scrub(shown)
                    + "'; is this a Redis server (or a proxy that changes replies)?",
                null));
      }
    }
  }

  /** The {@code EVAL} of the script, with the keys and arguments of the {@code EVALSHA}. */
  private CommandArguments evalInsteadOf() {
    CommandArguments eval =
        new CommandArguments(Protocol.Command.EVAL).addObjects(kind.fallbackScript());
    int index = 0;
    for (Rawable argument : command) {
      if (index++ >= 2) { // 0: EVALSHA, 1: the digest
        eval.addObjects(argument);
      }
    }
    return eval;
  }

  private T finish(T value, RedlockException failed) {
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

  @Override
  public void abandon(Consumer<? super T> ended) {
    if (abandoned) {
      return;
    }
    abandoned = true;
    if (finished) {
      ended.accept(failure == null ? answer : null);
      return;
    }
    if (!kind.droppable() || !claimed.compareAndSet(false, true)) {
      // sent, or to be sent (a release): the connection is closed once the command is out
      // Never on the caller's thread: the pool replaces a discarded connection at once, and
      // opening one to a stalled server (connect, then INFO) takes up to the socket timeout.
      sent.whenComplete(
          (c, e) -> {
            if (c != null) {
              node.discardInBackground(c);
            }
          });
    }
    ended.accept(null);
  }

  // Reply parsers: any exception means a reply no Redis gives, reported by RedisCall.

  private static AcquireResult ok(Object reply) {
    if (reply == null) {
      return AcquireResult.HELD;
    }
    if (!Arrays.equals((byte[]) reply, OK)) {
      throw new IllegalStateException();
    }
    return AcquireResult.ACQUIRED;
  }

  private static Boolean isOne(Object reply) {
    return (Long) reply == 1L;
  }

  private static AcquireResult fence(Object reply) {
    return reply == null ? AcquireResult.HELD : AcquireResult.acquired(Long.parseLong(text(reply)));
  }

  /** {@code TIME}'s answer: an array of two bulk strings, seconds and microseconds. */
  private static Instant time(Object reply) {
    List<?> parts = (List<?>) reply;
    long us = Long.parseLong(text(parts.get(1)));
    if (parts.size() != 2 || us < 0 || us >= 1_000_000) {
      throw new IllegalStateException();
    }
    return Instant.ofEpochSecond(Long.parseLong(text(parts.get(0))), us * 1_000);
  }

  /** The value and the PTTL in ms (-1: no expiry); nil and -2 when the key is absent. */
  private static Optional<KeyHolder> holder(Object reply) {
    List<?> parts = (List<?>) reply;
    if (parts.get(0) == null) {
      return Optional.empty();
    }
    long ms = (Long) parts.get(1);
    if (parts.size() != 2 || ms < -1) {
      throw new IllegalStateException();
    }
    Duration left = ms == -1 ? ChronoUnit.FOREVER.getDuration() : Duration.ofMillis(ms);
    return Optional.of(new KeyHolder(text(parts.get(0)), left));
  }

  private static String text(Object bulk) {
    return new String((byte[]) bulk, StandardCharsets.UTF_8);
  }
}
