package io.redlock.benchmarks;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongUnaryOperator;

/**
 * The floors of a topology as slice drivers for {@link CompareBuilds} ({@code --floors}): each runs
 * the same code as its JMH benchmark, on one thread, so that a build and its floors take turns on
 * the same servers within one JVM. That measures how far the library is from the floor far more
 * steadily than separate JMH forks, whose rounds differ by 10% and more on a shared machine.
 */
final class Floors {
  private static final int INDEX = 1_000; // keys of their own, apart from JMH threads' and builds'

  private Floors() {}

  /** A floor by name. */
  record Floor(String name, LongUnaryOperator driver) {}

  /**
   * The floors of a topology, the reference floor first (the one the library should reach): for the
   * mixed topologies the floor of the same PostgreSQL client first, then the other's, then pgjdbc
   * on one PostgreSQL server for reference.
   */
  static List<Floor> of(String topology) throws SQLException {
    List<Floor> floors = new ArrayList<>();
    Recorder idle = new Recorder(); // records nothing outside JMH's measurement iterations
    switch (topology) {
      case "redis5" -> {
        RedisFloorBenchmark.Nodes nodes = new RedisFloorBenchmark.Nodes();
        nodes.open(INDEX);
        RedisFloorBenchmark bench = new RedisFloorBenchmark();
        floors.add(
            new Floor(
                "floor: Jedis multiplexed, 5 Redis",
                new Driver(() -> bench.multiplexed(nodes, idle), nodes::close)));
      }
      case "redis3pg2" -> {
        floors.add(jdbcThreads(idle));
        floors.add(vertxMixed(idle));
        floors.add(plainJdbc(idle));
      }
      case "redis3pg2vertx" -> {
        floors.add(vertxMixed(idle));
        floors.add(jdbcThreads(idle));
        floors.add(plainJdbc(idle));
      }
      case "pg1", "pg1vertx" -> floors.add(plainJdbc(idle));
      default ->
          throw new IllegalArgumentException(
              "no floors for topology "
                  + topology
                  + ": use redis5, redis3pg2, redis3pg2vertx, pg1 or pg1vertx");
    }
    return floors;
  }

  private static Floor jdbcThreads(Recorder idle) throws SQLException {
    MixedFloorBenchmark.Nodes nodes = new MixedFloorBenchmark.Nodes();
    nodes.open(INDEX);
    MixedFloorBenchmark bench = new MixedFloorBenchmark();
    return new Floor(
        "floor: Jedis multiplexed + a pgjdbc thread per PostgreSQL node, 3 Redis + 2 PostgreSQL",
        new Driver(() -> bench.cycle(nodes, idle), nodes::close));
  }

  private static Floor vertxMixed(Recorder idle) throws SQLException {
    VertxFloorBenchmark.Loop loop = new VertxFloorBenchmark.Loop();
    loop.open();
    VertxFloorBenchmark.Mixed nodes = new VertxFloorBenchmark.Mixed();
    nodes.open(loop.vertx, INDEX);
    VertxFloorBenchmark bench = new VertxFloorBenchmark();
    return new Floor(
        "floor: Jedis multiplexed + Vert.x, 3 Redis + 2 PostgreSQL",
        new Driver(
            () -> bench.mixed(nodes, idle),
            () -> {
              nodes.close();
              loop.close();
            }));
  }

  private static Floor plainJdbc(Recorder idle) throws SQLException {
    PostgresFloorBenchmark.Statements statements = new PostgresFloorBenchmark.Statements();
    statements.open(INDEX);
    PostgresFloorBenchmark bench = new PostgresFloorBenchmark();
    return new Floor(
        "floor: pgjdbc, one connection, 1 PostgreSQL",
        new Driver(() -> bench.cycle(statements, idle), statements::close));
  }

  /** One cycle of a floor. */
  @FunctionalInterface
  interface Cycle {
    void run() throws Exception;
  }

  /** What a floor closes. */
  @FunctionalInterface
  interface Close {
    void run() throws Exception;
  }

  /** Runs a floor's cycles for {@link CompareBuilds}. */
  private record Driver(Cycle cycle, Close closer) implements LongUnaryOperator, AutoCloseable {
    @Override
    public long applyAsLong(long cycles) {
      long start = System.nanoTime();
      try {
        for (long i = 0; i < cycles; i++) {
          cycle.run();
        }
      } catch (Exception e) {
        throw new IllegalStateException("a floor cycle failed", e);
      }
      return System.nanoTime() - start;
    }

    @Override
    public void close() throws Exception {
      closer.run();
    }
  }
}
