package io.redlock.benchmarks;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.Redlock;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.infra.ThreadParams;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * The contended case: every benchmark thread (8) loops acquire, release on ONE shared key, waiting
 * up to {@link Workload#CONTENDED_MAX_WAIT} for it. Each grant is stamped with {@link
 * System#nanoTime()} against the moment the previous holder began its release (shared across
 * threads), giving the wait between one release and the next grant; grants to another client than
 * the previous holder are counted as hand-offs. JMH's own score is the time per successful
 * acquisition as each thread sees it.
 */
@Threads(8)
public class ContendedBenchmark {

  /** The lock under contention, and the stamps of the last release. */
  @State(Scope.Benchmark)
  public static class Shared {
    /** The lock implementation under test. */
    @Param({
      "redlock-redis5",
      "redlock-redis3pg2",
      "redlock-pg3notify",
      "redisson-lock",
      "redisson-redlock"
    })
    public String subject;

    static final String KEY = "bench:contended";

    Redlock redlock;
    RedissonClient[] redisson;

    /** When the last holder began to release; 0 at the start of each iteration. */
    volatile long releaseStarted;

    volatile int lastHolder = -1;

    @Setup(Level.Trial)
    public void open() {
      if (subject.startsWith("redlock-")) {
        String topology = subject.substring("redlock-".length());
        redlock = Redlock.builder().nodeUris(RedlockBenchmark.uris(topology)).build();
      } else {
        redisson = RedissonBenchmark.Clients.open(BenchServers.get().redis());
      }
    }

    @Setup(Level.Iteration)
    public void iteration() {
      releaseStarted = 0;
      lastHolder = -1;
    }

    @TearDown(Level.Trial)
    public void close() {
      if (redlock != null) {
        redlock.close();
      }
      if (redisson != null) {
        for (RedissonClient c : redisson) {
          c.shutdown();
        }
      }
    }
  }

  /** One client: its identity and its handle on the shared lock. */
  @State(Scope.Thread)
  public static class Client {
    int id;
    Lease lease;
    RLock rlock;

    @Setup(Level.Trial)
    @SuppressWarnings("deprecation") // RedissonRedLock is deprecated upstream but still shipped
    public void create(Shared shared, ThreadParams thread) {
      id = thread.getThreadIndex();
      if (shared.redisson != null) {
        if (shared.subject.equals("redisson-lock")) {
          rlock = shared.redisson[0].getLock(Shared.KEY + ":single");
        } else {
          RLock[] perNode = new RLock[shared.redisson.length];
          for (int i = 0; i < perNode.length; i++) {
            perNode[i] = shared.redisson[i].getLock(Shared.KEY + ":red");
          }
          rlock = new RedissonRedLock(perNode);
        }
      }
    }

    boolean lock(Shared shared) throws InterruptedException {
      if (rlock != null) {
        return rlock.tryLock(
            Workload.CONTENDED_MAX_WAIT.toMillis(), Workload.TTL.toMillis(), TimeUnit.MILLISECONDS);
      }
      try {
        lease = shared.redlock.acquire(Shared.KEY, Workload.TTL, Workload.CONTENDED_MAX_WAIT);
        return true;
      } catch (LockTimeoutException starved) {
        return false;
      }
    }

    void unlock() {
      if (rlock != null) {
        rlock.unlock();
      } else {
        lease.release();
        lease = null;
      }
    }
  }

  @Benchmark
  public boolean handOff(Shared shared, Client client, Recorder recorder)
      throws InterruptedException {
    long start = System.nanoTime();
    if (!client.lock(shared)) {
      recorder.failed();
      return false;
    }
    long granted = System.nanoTime();
    recorder.acquired(granted - start);
    long releaseStarted = shared.releaseStarted;
    if (releaseStarted != 0) {
      recorder.granted(granted - releaseStarted, shared.lastHolder != client.id);
    }
    shared.lastHolder = client.id;
    shared.releaseStarted = System.nanoTime();
    client.unlock();
    return true;
  }
}
