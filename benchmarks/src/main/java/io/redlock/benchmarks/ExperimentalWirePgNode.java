package io.redlock.benchmarks;

import io.redlock.spi.AcquireResult;
import io.redlock.spi.LockNode;
import io.redlock.spi.NodeCapabilities;
import io.redlock.spi.Reply;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.function.IntFunction;

/**
 * <b>An experiment, not a backend:</b> a PostgreSQL lock node that sends its statement over {@link
 * PgWire} when the engine starts the call and reads the answer when the engine awaits it, as the
 * Redis backend does. {@link WireNodeExperiment} uses it to measure what a non-blocking PostgreSQL
 * transport would bring the mixed quorum before anybody builds one.
 *
 * <p>It runs the JDBC backend's statements (copied in {@link PostgresStatements}) on the JDBC
 * backend's table, but it has one connection for one calling thread, no TLS, no pool, no timeouts
 * of its own (the connection's 2 s socket timeout), no fencing, status or notifications, and it
 * cannot give up on a reply ({@link Reply#abandon} refuses). Never use it outside this experiment.
 */
final class ExperimentalWirePgNode implements LockNode {
  private static final NodeCapabilities CAPABILITIES =
      new NodeCapabilities(Duration.ofNanos(1_000));

  private final String name;
  private final PgWire connection;

  /** Connects to a benchmark server (its JDBC URL) whose table the JDBC backend has created. */
  ExperimentalWirePgNode(String jdbcUrl, String name) {
    this.name = name;
    this.connection = new PgWire(jdbcUrl);
    try {
      PostgresStatements.prepare(connection);
    } catch (RuntimeException e) {
      connection.close();
      throw e;
    }
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public NodeCapabilities capabilities() {
    return CAPABILITIES;
  }

  @Override
  public Reply<AcquireResult> tryAcquire(String key, String token, Duration ttl) {
    connection.send(
        "acquire",
        PostgresStatements.sha256(key),
        key,
        token.getBytes(StandardCharsets.UTF_8),
        ttl.toNanos() / 1_000);
    connection.flush();
    return new Answer<>(connection, rows -> AcquireResult.of(rows == 1));
  }

  @Override
  public Reply<Boolean> release(String key, String token) {
    connection.send(
        "release", PostgresStatements.sha256(key), token.getBytes(StandardCharsets.UTF_8));
    connection.flush();
    return new Answer<>(connection, live -> live == 1);
  }

  @Override
  public Reply<Boolean> extend(String key, String token, Duration ttl) {
    throw new UnsupportedOperationException("the experiment only acquires and releases");
  }

  @Override
  public void close() {
    connection.close();
  }

  /** The answer of the one statement in flight on the connection, read when awaited. */
  private static final class Answer<T> implements Reply<T> {
    private final PgWire connection;
    private final IntFunction<T> meaning;

    Answer(PgWire connection, IntFunction<T> meaning) {
      this.connection = connection;
      this.meaning = meaning;
    }

    @Override
    public T await(Duration timeout) {
      return meaning.apply(connection.result());
    }

    @Override
    public void abandon(Consumer<? super T> lateAnswer) {
      throw new UnsupportedOperationException("the experiment cannot give up on a reply");
    }
  }
}
