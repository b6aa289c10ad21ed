package io.redlock.jdbc.internal;

import io.redlock.NodeTimeoutException;
import io.redlock.RedlockException;
import io.redlock.RedlockNonTransientException;
import io.redlock.RedlockTransientException;
import io.redlock.spi.AcquireResult;
import io.redlock.spi.Reply;
import java.io.IOException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lock calls of a PostgreSQL node over the wire protocol instead of JDBC ({@code
 * redlock.wireProtocol}, {@code auto} by default): {@code tryAcquire}, {@code release} and {@code
 * extend} write their statement when the engine starts the call and read the answer on the thread
 * that awaits it, as the Redis backend does, so one thread asks every node at once without a worker
 * thread per call.
 *
 * <p>It runs the very statements of the JDBC path ({@link LockTable#wireStatements}) on the same
 * table, which the node's JDBC pool checks (or creates) first; everything else (fencing, status,
 * the server's clock, notifications) stays on JDBC. Failures are classified by SQLState exactly as
 * JDBC ones ({@link SqlErrors}).
 *
 * <p>Timeouts: the engine's wait bounds every read on its thread; a reply it gives up on is read in
 * the background for up to the socket timeout (the node's query timeout plus 5 s), its late answer
 * passed on, and its connection kept, or closed if the answer never comes. The server ends a
 * statement that runs longer than the query timeout itself ({@code statement_timeout} is set on
 * every connection).
 */
public final class PgWireTransport implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PgWireTransport.class);

  private static final int[] ACQUIRE_TYPES = {
    PgWireConnection.BYTEA, PgWireConnection.TEXT, PgWireConnection.BYTEA, PgWireConnection.INT8
  };
  private static final int[] RELEASE_TYPES = {PgWireConnection.BYTEA, PgWireConnection.BYTEA};
  private static final int[] EXTEND_TYPES = {
    PgWireConnection.INT8, PgWireConnection.BYTEA, PgWireConnection.BYTEA
  };

  private final String node;
  private final PgWireSettings settings;
  private final LockTable table;
  private final TableName tableName;
  private final Executor executor;
  private final PgWirePool pool;
  private final ConcurrentHashMap<String, Integer> statementIds = new ConcurrentHashMap<>();
  private final AtomicInteger nextStatementId = new AtomicInteger();
  private final Runnable connectionLost;
  private final java.util.concurrent.ExecutorService lateReaders;

  /**
   * Whether the node may run its calls over JDBC instead ({@code redlock.wireProtocol} left at
   * {@code auto}): the transport then takes calls only once one of its connections has opened, and
   * gives up for good, leaving them to JDBC, when it meets what it cannot do ({@link #giveUp}).
   */
  private final boolean optional;

  /** A connection has opened: in optional mode, the transport takes calls from now on. */
  private volatile boolean engaged;

  /** Why an optional transport gave up, or null. */
  private volatile String gaveUp;

  /** An optional transport logged once that a server refused its connection. */
  private volatile boolean reportedRefusal;

  /** A background connection attempt is under way (optional mode's retries, and the first). */
  private final java.util.concurrent.atomic.AtomicBoolean connecting =
      new java.util.concurrent.atomic.AtomicBoolean();

  /** In optional mode, before the first connection: when the next attempt is due, and the wait. */
  private volatile long nextAttemptNanos;

  private long retryNanos = FIRST_RETRY_NANOS; // written only by the attempt holding connecting

  private static final long FIRST_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
  private static final long LAST_RETRY_NANOS = TimeUnit.SECONDS.toNanos(30);

  /**
   * @param node the node's redacted name
   * @param settings where to connect
   * @param table the node's table (checked or created over JDBC)
   * @param tableName its name, for messages
   * @param poolSize the most connections open at once
   * @param executor runs the calls that must wait (for the table check or a new connection), and
   *     opens the first connection in the background (late answers have threads of their own)
   * @param connectionLost run when a connection broke: the node's JDBC connections are likely stale
   *     too (a restarted server), and the status call that may follow must not meet one
   * @param optional the node runs its calls over JDBC until a connection of this transport has
   *     opened, and for good once the transport met what it cannot do ({@link #takesCalls})
   */
  public PgWireTransport(
      String node,
      PgWireSettings settings,
      LockTable table,
      TableName tableName,
      int poolSize,
      Executor executor,
      Runnable connectionLost,
      boolean optional) {
    this.node = node;
    this.settings = settings;
    this.table = table;
    this.tableName = tableName;
    this.executor = executor;
    this.connectionLost = connectionLost;
    this.optional = optional;
    String prefix =
        "redlock_" + Long.toHexString(new java.security.SecureRandom().nextLong()) + "_";
    this.pool = new PgWirePool(() -> open(prefix), poolSize, Duration.ofSeconds(30));
    AtomicInteger serial = new AtomicInteger();
    // Late answers are read on threads of their own: each holds a connection, so there are at
    // most poolSize of them, and they must never queue behind calls that wait for a connection
    // (which only a late reader may give back): that starved the pool under load.
    this.lateReaders =
        java.util.concurrent.Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "redlock-pgwire-late-" + serial.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    // One connection opened in the background from the start (as the JDBC pool does), so that the
    // first calls need not wait for a connection's TLS and SCRAM; a node that is down only fails
    // its own calls.
    this.nextAttemptNanos = System.nanoTime();
    connectInBackground();
  }

  private PgWireConnection open(String prefix) throws SQLException {
    try {
      PgWireConnection c = PgWireConnection.open(settings, node, prefix);
      engaged = true;
      return c;
    } catch (RedlockNonTransientException | LinkageError e) {
      if (optional && !engaged) {
        giveUp(e);
      }
      throw e;
    }
  }

  /**
   * An optional transport that has not connected yet met what it cannot do: an authentication
   * method it does not speak, TLS the server refuses or a certificate it cannot check, no password
   * to give, a library missing. The calls stay on JDBC from now on (whose own settings may still
   * work, or report the problem as JDBC does). Failures with an SQLState (a wrong password, an
   * unknown database, a pooler's refusal) are not reasons: JDBC meets them too, and they may be
   * mended while the node runs, so the transport keeps trying every 30 s at most. Once connected,
   * the transport never gives up: a later failure fails its calls, as with {@code true}.
   */
  private void giveUp(Throwable e) {
    synchronized (connecting) {
      if (gaveUp != null) {
        return;
      }
      gaveUp = e.getMessage() != null ? e.getMessage() : e.getClass().getName();
    }
    log.info(
        "{}: the lock calls stay on JDBC: the PostgreSQL wire protocol cannot be used ({})",
        node,
        gaveUp);
    pool.clear();
  }

  /**
   * Whether the node runs its lock calls through this transport: always, unless it is optional
   * (then only once one of its connections has opened, and never after it gave up). An optional
   * transport without a connection yet tries again in the background while calls come, 250 ms after
   * the first failure, then twice as long each time, up to every 30 s.
   */
  public boolean takesCalls() {
    if (!optional) {
      return true;
    }
    if (gaveUp != null) {
      return false;
    }
    if (engaged) {
      return true;
    }
    if (System.nanoTime() - nextAttemptNanos >= 0) {
      connectInBackground();
    }
    return false;
  }

  /** Why an optional transport gave up (the calls stay on JDBC), or null. */
  public String gaveUp() {
    return gaveUp;
  }

  /** Opens a connection on the executor unless an attempt is under way. */
  private void connectInBackground() {
    if (!connecting.compareAndSet(false, true)) {
      return;
    }
    try {
      executor.execute(
          () -> {
            try {
              pool.addIdle();
              retryNanos = FIRST_RETRY_NANOS;
            } catch (Throwable e) {
              backOff();
              if (optional && !engaged && gaveUp == null && !reportedRefusal && refusal(e)) {
                reportedRefusal = true; // once: the next attempts are logged at DEBUG
                log.info(
                    "{}: the lock calls stay on JDBC for now: the PostgreSQL wire protocol could"
                        + " not connect ({}); trying again every 30 s at most",
                    node,
                    e.getMessage());
              } else {
                log.debug("{}: could not open a wire connection: {}", node, e.getMessage());
              }
              if (e instanceof VirtualMachineError fatal) {
                throw fatal;
              }
            } finally {
              connecting.set(false);
            }
          });
    } catch (RejectedExecutionException e) {
      backOff(); // the node is closing, or its workers' backlog is full
      connecting.set(false);
    }
  }

  /**
   * A refusal by the server (an SQLState outside the network's class 08, or a protocol violation,
   * as a pooler reports a start-up parameter it does not pass on), not a network failure.
   */
  private static boolean refusal(Throwable e) {
    return e instanceof SQLException sql
        && sql.getSQLState() != null
        && (!sql.getSQLState().startsWith("08") || sql.getSQLState().equals("08P01"));
  }

  /** The next background attempt waits twice as long as the last, up to 30 s. */
  private void backOff() {
    nextAttemptNanos = System.nanoTime() + retryNanos;
    retryNanos = Math.min(LAST_RETRY_NANOS, retryNanos * 2);
  }

  /** What a statement's answer means. */
  @FunctionalInterface
  private interface Meaning<T> {
    /**
     * @param rows the row count of the CommandComplete tag, or -1
     * @param first the first column of the first row: 1 true, 0 false or NULL, -1 no row
     */
    T of(long rows, int first);
  }

  /** Writes a statement's parameters. */
  @FunctionalInterface
  private interface Parameters {
    void write(PgWireConnection c);
  }

  /** One lock call: its statement, parameters and meaning. */
  private record Call<T>(
      String operation, String sql, int[] types, Parameters parameters, Meaning<T> meaning) {}

  /** Conditional insert with expiry, as {@link LockTable#acquire}. */
  public Reply<AcquireResult> acquire(String key, byte[] keyBytes, byte[] token, Duration ttl) {
    byte[] hash = KeyCodec.hash(keyBytes);
    String display = KeyCodec.display(key);
    long micros = ttlMicros(ttl);
    return call(
        "tryAcquire",
        LockTable.WireStatements::acquire,
        ACQUIRE_TYPES,
        c -> {
          c.paramBytes(hash);
          c.paramText(display);
          c.paramBytes(token);
          c.paramLong(micros);
        },
        (rows, first) -> AcquireResult.of(rows == 1));
  }

  /** Compare-and-delete, as {@link LockTable#release}: true if a live key held the token. */
  public Reply<Boolean> release(byte[] keyBytes, byte[] token) {
    byte[] hash = KeyCodec.hash(keyBytes);
    return call(
        "release",
        LockTable.WireStatements::release,
        RELEASE_TYPES,
        c -> {
          c.paramBytes(hash);
          c.paramBytes(token);
        },
        (rows, first) -> first == 1);
  }

  /** Compare-and-extend, as {@link LockTable#extend}. */
  public Reply<Boolean> extend(byte[] keyBytes, byte[] token, Duration ttl) {
    byte[] hash = KeyCodec.hash(keyBytes);
    long micros = ttlMicros(ttl);
    return call(
        "extend",
        LockTable.WireStatements::extend,
        EXTEND_TYPES,
        c -> {
          c.paramLong(micros);
          c.paramBytes(hash);
          c.paramBytes(token);
        },
        (rows, first) -> rows == 1);
  }

  /** Whole microseconds, rounded up so that a lock never ends early (as the dialect does). */
  private static long ttlMicros(Duration ttl) {
    long micros = ttl.toNanos() / 1_000;
    return ttl.toNanos() % 1_000 == 0 ? micros : micros + 1;
  }

  private <T> Reply<T> call(
      String operation,
      java.util.function.Function<LockTable.WireStatements, String> statement,
      int[] types,
      Parameters parameters,
      Meaning<T> meaning) {
    LockTable.WireStatements statements = table.wireStatementsIfReady();
    PgWireConnection idle = statements == null ? null : pool.pollIdle();
    if (idle != null) {
      Call<T> call = new Call<>(operation, statement.apply(statements), types, parameters, meaning);
      try {
        send(idle, call);
      } catch (IOException e) {
        broken(idle);
        return Reply.failed(translate(operation, e));
      } catch (RuntimeException e) {
        discard(idle);
        return Reply.failed(translate(operation, e));
      }
      return new PgWireReply<>(this, call, idle);
    }
    // the table must be checked first, or no connection is idle: a worker does it and sends,
    // unless the reply was abandoned meanwhile
    CompletableFuture<Object[]> sent = new CompletableFuture<>();
    // a release is sent even when the engine stops waiting for it: see Reply.abandon
    PgWireReply<T> reply = new PgWireReply<>(this, operation, sent, !"release".equals(operation));
    try {
      executor.execute(
          () -> {
            if (!reply.stillWanted()) {
              return;
            }
            PgWireConnection c = null;
            try {
              Call<T> call =
                  new Call<>(
                      operation,
                      statement.apply(table.wireStatements()),
                      types,
                      parameters,
                      meaning);
              c = pool.borrow(settings.connectTimeout());
              if (!reply.claimSend()) {
                giveBack(c);
                return;
              }
              send(c, call);
              sent.complete(new Object[] {c, call});
            } catch (IOException e) {
              broken(c);
              sent.completeExceptionally(e);
            } catch (Throwable t) {
              if (c != null) {
                discard(c); // borrowed, but what was sent on it is unknown
              }
              sent.completeExceptionally(t);
            }
          });
    } catch (RejectedExecutionException e) {
      return Reply.failed(
          new RedlockTransientException(
              node, "the node's worker pool refused the call (closed or overloaded)", e));
    }
    return reply;
  }

  private void send(PgWireConnection c, Call<?> call) throws IOException {
    int id = settings.namedStatements() ? statementId(call.sql()) : PgWireConnection.UNNAMED;
    if (id == PgWireConnection.UNNAMED || !c.isPrepared(id)) {
      c.parse(id, call.sql(), call.types());
    }
    c.bind(id, call.types().length);
    call.parameters().write(c);
    c.executeAndSync();
    c.flush();
  }

  private int statementId(String sql) {
    Integer id = statementIds.get(sql);
    if (id != null) {
      return id;
    }
    return statementIds.computeIfAbsent(
        sql,
        s -> {
          int n = nextStatementId.getAndIncrement();
          if (n >= PgWireConnection.MAX_STATEMENTS) {
            throw new IllegalStateException("more lock statements than expected: " + n);
          }
          return n;
        });
  }

  /** A connection whose state is unknown: closed, and the idle ones too (likely stale as well). */
  void broken(PgWireConnection c) {
    if (c != null) {
      pool.discard(c);
    }
    pool.clear();
    try {
      connectionLost.run();
    } catch (RuntimeException e) {
      log.debug("{}: evicting the JDBC connections failed: {}", node, e.toString());
    }
  }

  void giveBack(PgWireConnection c) {
    pool.giveBack(c);
  }

  /** A connection whose answer was an error: closed (its prepared statements may be gone). */
  void discard(PgWireConnection c) {
    pool.discard(c);
  }

  String node() {
    return node;
  }

  long socketTimeoutNanos() {
    return settings.socketTimeout().toNanos();
  }

  boolean runInBackground(Runnable task) {
    try {
      lateReaders.execute(task);
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  /** A failure as the library reports it, classified as a JDBC one would be. */
  RedlockException translate(String operation, Throwable e) {
    if (e instanceof RedlockException redlock) {
      return redlock;
    }
    if (e instanceof IllegalStateException closed) {
      return new RedlockTransientException(node, closed.getMessage(), closed); // a closed pool
    }
    Throwable error =
        e instanceof IOException io
            ? new SQLException("lost the connection: " + io, "08006", io)
            : e;
    SqlErrors.Kind kind = SqlErrors.classify(error);
    if (kind == SqlErrors.Kind.MISSING_TABLE || kind == SqlErrors.Kind.MISSING_COLUMN) {
      table.schemaChanged();
    }
    return SqlErrors.translate(node, operation, error, tableName, table.ddl());
  }

  /** Connections open now, idle or lent (for tests). */
  public int openConnections() {
    return pool.open();
  }

  /** Closes the idle connections now and lent ones when their answer has been read. */
  @Override
  public void close() {
    pool.close();
    lateReaders.shutdown(); // late reads under way end within the socket timeout
  }

  /**
   * The answer to one statement sent on one connection. {@link #await} reads it on the caller's
   * thread within the caller's timeout; a timeout leaves the connection as it is so that {@link
   * #abandon} can hand it to a background reader. Either way the connection goes back to the pool
   * (or is closed if its state is unknown) exactly once.
   */
  private static final class PgWireReply<T> implements Reply<T> {
    private final PgWireTransport transport;
    private final String operation;

    /** The call and connection, when it was sent before the reply was made. */
    private final Call<T> callNow;

    private final PgWireConnection sentNow;

    /** Otherwise: the connection and the call, once a worker has sent it. */
    private final CompletableFuture<Object[]> sent;

    // guarded by this
    private Call<T> call;
    private long rows = -1;
    private int first = -1;
    private boolean finished;
    private T answer;
    private RuntimeException failure;
    private boolean abandoned;

    /** For a statement a worker sends later: 0 may still be sent, 1 sending, 2 dropped. */
    private final java.util.concurrent.atomic.AtomicInteger sendState =
        new java.util.concurrent.atomic.AtomicInteger();

    PgWireReply(PgWireTransport transport, Call<T> call, PgWireConnection connection) {
      this.droppable = true;
      this.transport = transport;
      this.operation = call.operation();
      this.callNow = call;
      this.sentNow = connection;
      this.sent = null;
    }

    /** Whether an abandoned statement not sent yet is dropped (all but releases). */
    private final boolean droppable;

    PgWireReply(
        PgWireTransport transport,
        String operation,
        CompletableFuture<Object[]> sent,
        boolean droppable) {
      this.droppable = droppable;
      this.transport = transport;
      this.operation = operation;
      this.callNow = null;
      this.sentNow = null;
      this.sent = sent;
    }

    @Override
    public synchronized T await(Duration timeout) {
      if (abandoned) {
        throw new IllegalStateException(transport.node() + ": this reply was abandoned");
      }
      if (finished) {
        return outcome();
      }
      if (Thread.currentThread().isInterrupted()) {
        // the call stays pending: abandon() still reads its answer
        throw new RedlockTransientException(
            transport.node(), "interrupted while waiting for the node", null);
      }
      long deadline = System.nanoTime() + Math.max(0, timeout.toNanos());
      PgWireConnection connection;
      try {
        connection = connection(timeout);
      } catch (NodeTimeoutException e) {
        throw e;
      } catch (RedlockException e) {
        if (Thread.currentThread().isInterrupted()) {
          // not finished: the statement may still go out, and abandon() must then read its
          // answer and give its connection back
          throw e;
        }
        return finish(null, e);
      }
      try {
        return finish(read(connection, deadline), null);
      } catch (NodeTimeoutException notYet) {
        throw new NodeTimeoutException(transport.node(), timeout);
      } catch (RedlockException failed) {
        return finish(null, failed);
      }
    }

    /** The connection the statement went out on, waiting for a worker to send it if need be. */
    @SuppressWarnings("unchecked")
    private PgWireConnection connection(Duration timeout) {
      if (sentNow != null) {
        call = callNow;
        return sentNow;
      }
      Object[] pair;
      try {
        if (sent.isDone() || timeout.isZero() || timeout.isNegative()) {
          if (!sent.isDone()) {
            throw new NodeTimeoutException(transport.node(), timeout);
          }
          pair = sent.get();
        } else {
          pair = sent.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        }
      } catch (TimeoutException e) {
        throw new NodeTimeoutException(transport.node(), timeout);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new RedlockTransientException(
            transport.node(), "interrupted while waiting for the node", e);
      } catch (ExecutionException e) {
        throw transport.translate(operation, e.getCause() == null ? e : e.getCause());
      }
      call = (Call<T>) pair[1];
      return (PgWireConnection) pair[0];
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
     * Reads the answer until {@code deadline}. On an answer or a failure the connection has been
     * given back (or closed); on {@link NodeTimeoutException} it is still held and usable.
     */
    private T read(PgWireConnection c, long deadline) {
      while (true) {
        int type;
        try {
          type = c.next(deadline);
        } catch (IOException e) {
          transport.broken(c);
          throw transport.translate(operation, e);
        }
        try {
          type = handle(c, type);
        } catch (RedlockException e) {
          throw e; // a timeout, or the server's error (the connection is dealt with)
        } catch (RuntimeException e) {
          // a malformed message: the stream cannot be trusted any more
          transport.discard(c);
          throw transport.translate(
              operation, new IOException("protocol error: a malformed message from the server", e));
        }
        if (type == 'Z') {
          T value;
          try {
            value = call.meaning().of(rows, first);
          } catch (RuntimeException e) {
            transport.discard(c);
            throw transport.translate(operation, e);
          }
          transport.giveBack(c);
          return value;
        }
      }
    }

    /** Takes in one message; answers its type. */
    private int handle(PgWireConnection c, int type) {
      switch (type) {
        case -1 -> throw new NodeTimeoutException(transport.node(), Duration.ZERO);
        case 'D' -> {
          if (first < 0 && c.bodyShort(0) >= 1) {
            int length = c.bodyInt(2);
            first = length == 1 && c.bodyByte(6) != 0 ? 1 : 0;
          }
        }
        case 'C' -> rows = c.commandCount();
        case 'E' -> {
          SQLException error = c.serverError();
          String state = error.getSQLState();
          if (state != null && (state.startsWith("08") || state.startsWith("57P"))) {
            transport.broken(c); // the server is going away: the idle ones are stale too
          } else {
            transport.discard(c);
          }
          throw transport.translate(operation, error);
        }
        default -> {} // ReadyForQuery, ParseComplete, BindComplete, notices, parameters
      }
      return type;
    }

    /** Whether a worker may still send the statement: false once the reply was abandoned. */
    boolean stillWanted() {
      return sendState.get() == 0 || !droppable;
    }

    /** Claims the sending; false if the reply was abandoned (then it is never sent). */
    boolean claimSend() {
      return sendState.compareAndSet(0, 1) || !droppable;
    }

    @Override
    public synchronized void abandon(Consumer<? super T> ended) {
      if (abandoned) {
        return;
      }
      abandoned = true;
      if (finished) {
        ended.accept(failure == null ? answer : null); // the connection is back in the pool
        return;
      }
      if (sentNow != null) {
        call = callNow;
        readLateInBackground(sentNow, ended);
        return;
      }
      if (droppable && sendState.compareAndSet(0, 2)) {
        ended.accept(null); // never sent
        return;
      }
      sent.whenComplete(
          (pair, sendFailure) -> {
            if (pair == null) {
              ended.accept(null); // the send failed: there is no late answer
              return;
            }
            synchronized (this) {
              @SuppressWarnings("unchecked")
              Call<T> c = (Call<T>) pair[1];
              call = c;
            }
            readLateInBackground((PgWireConnection) pair[0], ended);
          });
    }

    private void readLateInBackground(PgWireConnection c, Consumer<? super T> lateAnswer) {
      if (!transport.runInBackground(() -> readLate(c, lateAnswer))) {
        transport.discard(c); // the node is closed: nobody will read the answer
        lateAnswer.accept(null);
      }
    }

    private void readLate(PgWireConnection c, Consumer<? super T> lateAnswer) {
      T value;
      try {
        synchronized (this) {
          value = read(c, System.nanoTime() + transport.socketTimeoutNanos());
        }
      } catch (NodeTimeoutException e) {
        transport.discard(c); // still no answer: the connection's state is unknown for good
        log.debug(
            "{}: no late answer to {} within the socket timeout", transport.node(), operation);
        lateAnswer.accept(null);
        return;
      } catch (RuntimeException e) {
        log.debug("{}: late answer to {} failed: {}", transport.node(), operation, e.toString());
        lateAnswer.accept(null); // read() gave back or closed the connection
        return;
      }
      try {
        lateAnswer.accept(value);
      } catch (RuntimeException e) {
        log.warn("{}: the handler of a late answer to {} failed", transport.node(), operation, e);
      }
    }
  }
}
