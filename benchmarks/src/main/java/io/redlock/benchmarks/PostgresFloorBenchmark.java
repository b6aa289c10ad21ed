package io.redlock.benchmarks;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * The single-connection pgjdbc floor: plain JDBC running the statements of the backends' own
 * PostgreSQL dialect ({@link PostgresStatements}: {@code INSERT .. ON CONFLICT .. DO UPDATE ..
 * WHERE expired}, then the plain compare-and-delete {@code DELETE .. WHERE key_hash = ? AND token =
 * ? AND fence = 0 RETURNING expires_at > clock_timestamp()}) on their table, on one PostgreSQL
 * server: one connection per benchmark thread, statements prepared once, a fixed key hash and
 * token. The reference of the 1-PostgreSQL targets.
 */
public class PostgresFloorBenchmark {

  /** One thread's connection and statements. */
  @State(Scope.Thread)
  public static class Statements {
    Connection connection;
    PreparedStatement acquire;
    PreparedStatement release;

    @Setup(Level.Trial)
    public void open(ThreadParams thread) throws SQLException {
      open(thread.getThreadIndex());
    }

    /** Opens the connections of benchmark thread {@code index} (also used by {@link Floors}). */
    void open(int index) throws SQLException {
      connection = DriverManager.getConnection(BenchServers.get().postgres().get(0));
      connection.setAutoCommit(true);
      PostgresStatements.createTable(connection);
      String key = "bench:pgfloor:" + index;
      String token = "pg-floor-token-" + index;
      acquire = PostgresStatements.acquire(connection, key, token);
      release = PostgresStatements.release(connection, key, token);
    }

    @TearDown(Level.Trial)
    public void close() throws SQLException {
      connection.close();
    }
  }

  @Benchmark
  public boolean cycle(Statements s, Recorder recorder) throws SQLException {
    long start = System.nanoTime();
    int acquired = s.acquire.executeUpdate();
    recorder.acquired(System.nanoTime() - start);
    boolean released;
    try (ResultSet rs = s.release.executeQuery()) {
      released = rs.next() && rs.getBoolean(1);
    }
    if (acquired != 1 || !released) {
      throw new IllegalStateException(
          "PostgreSQL floor cycle acquired " + acquired + " rows, released " + released);
    }
    return released;
  }
}
