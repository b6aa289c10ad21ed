package io.redlock.benchmarks;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.ThreadParams;
import org.redisson.Redisson;
import org.redisson.RedissonMultiLock;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The anchor: Redisson, the most used Redis lock library on the JVM, with its default settings,
 * {@code lock(leaseTime)} then {@code unlock()}: {@link RLock} on one node, and {@link
 * RedissonRedLock} / {@link RedissonMultiLock} over five clients, one per node.
 */
public class RedissonBenchmark {

  /** Five Redisson clients, one per Redis server, shared by all threads. */
  @State(Scope.Benchmark)
  public static class Clients {
    RedissonClient[] clients;

    @Setup(Level.Trial)
    public void open() {
      clients = open(BenchServers.get().redis());
    }

    static RedissonClient[] open(List<String> addresses) {
      RedissonClient[] out = new RedissonClient[addresses.size()];
      for (int i = 0; i < out.length; i++) {
        Config config = new Config();
        config.useSingleServer().setAddress("redis://" + addresses.get(i));
        out[i] = Redisson.create(config);
      }
      return out;
    }

    @TearDown(Level.Trial)
    public void close() {
      for (RedissonClient c : clients) {
        c.shutdown();
      }
    }
  }

  /** One thread's locks on its own key. */
  @State(Scope.Thread)
  public static class Locks {
    RLock single;
    RLock redLock;
    RLock multiLock;

    @Setup(Level.Trial)
    @SuppressWarnings("deprecation") // RedissonRedLock is deprecated upstream but still shipped
    public void create(Clients clients, ThreadParams thread) {
      String key = "bench:redisson:" + thread.getThreadIndex();
      RLock[] perNode = new RLock[clients.clients.length];
      RLock[] perNodeMulti = new RLock[clients.clients.length];
      for (int i = 0; i < perNode.length; i++) {
        perNode[i] = clients.clients[i].getLock(key + ":red");
        perNodeMulti[i] = clients.clients[i].getLock(key + ":multi");
      }
      single = clients.clients[0].getLock(key);
      redLock = new RedissonRedLock(perNode);
      multiLock = new RedissonMultiLock(perNodeMulti);
    }
  }

  @Benchmark
  public void lock(Locks locks, Recorder recorder) {
    cycle(locks.single, recorder);
  }

  @Benchmark
  public void redLock(Locks locks, Recorder recorder) {
    cycle(locks.redLock, recorder);
  }

  @Benchmark
  public void multiLock(Locks locks, Recorder recorder) {
    cycle(locks.multiLock, recorder);
  }

  private static void cycle(RLock lock, Recorder recorder) {
    long start = System.nanoTime();
    lock.lock(Workload.TTL.toMillis(), TimeUnit.MILLISECONDS);
    recorder.acquired(System.nanoTime() - start);
    lock.unlock();
  }
}
