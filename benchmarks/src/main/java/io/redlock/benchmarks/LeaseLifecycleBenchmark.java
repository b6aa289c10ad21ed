package io.redlock.benchmarks;

import io.redlock.Lease;
import io.redlock.Redlock;
import java.time.Duration;
import java.util.Optional;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * What a lease costs beyond the plain acquire + release of {@link RedlockBenchmark}, through the
 * public API with default settings, on the benchmark thread's own key:
 *
 * <ul>
 *   <li>{@link #cycle}: {@code tryAcquire} + {@code release}, the reference of the ratios below,
 *       measured in the same fork set as they are;
 *   <li>{@link #keptAliveCycle}: the same with {@code keepAlive()} between the two, so that the
 *       ratio to {@link #cycle} shows what registering a lease with the keep-alive scheduler and
 *       taking it off again on release adds (the renewal itself is due only after a third of the
 *       TTL, so none runs);
 *   <li>{@link #asyncCycle}: {@code tryAcquireAsync(..).join()} + {@code releaseAsync().join()},
 *       both on the library's scheduler threads: the hand-offs of the async path;
 *   <li>{@link #renewal}: one {@code extend} of a lease held across the iteration, the work a kept
 *       alive lease's scheduler does every period; {@link #renewalAsync}: the same through {@code
 *       extendAsync(..).join()}.
 * </ul>
 *
 * <p>For the cycles the {@link Recorder} times the acquire step and counts failed acquires and
 * unconfirmed releases as {@link RedlockBenchmark} does; for the renewals its "acquire" step is the
 * extend, and a refused extend counts as a failure.
 */
public class LeaseLifecycleBenchmark {

  /** The longest the held lease's acquisition waits for the thread's key, outside measurement. */
  private static final Duration HELD_MAX_WAIT = Duration.ofSeconds(5);

  /** One Redlock shared by all threads, over the nodes of one topology. */
  @State(Scope.Benchmark)
  public static class Quorum {
    /** Which nodes, as {@link RedlockBenchmark#uris} defines them. */
    @Param({"redis5", "redis3pg2"})
    public String topology;

    Redlock redlock;

    @Setup(Level.Trial)
    public void open() {
      redlock = Redlock.builder().nodeUris(RedlockBenchmark.uris(topology)).build();
    }

    @TearDown(Level.Trial)
    public void close() {
      redlock.close();
    }
  }

  /** The benchmark thread's own key. */
  @State(Scope.Thread)
  public static class Key {
    String key;

    @Setup(Level.Trial)
    public void create(ThreadParams thread) {
      key = "bench:lifecycle:" + thread.getThreadIndex();
    }
  }

  /**
   * A lease on the thread's own key, acquired before each iteration and released after it, for the
   * renewals. A lease that would reach the library's maximum number of extensions, or that is no
   * longer valid, is replaced by a fresh one inside the measurement: once in thousands of renewals.
   */
  @State(Scope.Thread)
  public static class Held {
    private Redlock redlock;
    private String key;
    private int rotateAt;
    Lease lease;

    @Setup(Level.Iteration)
    public void acquire(Quorum quorum, Key key) throws InterruptedException {
      this.redlock = quorum.redlock;
      this.key = key.key;
      this.rotateAt = redlock.settings().maxExtensions();
      lease = redlock.acquire(this.key, Workload.TTL, HELD_MAX_WAIT);
    }

    /** The held lease, replaced first if it cannot be extended any more. */
    Lease lease() throws InterruptedException {
      Lease l = lease;
      if (l.extensions() >= rotateAt || !l.isValid()) {
        l.release();
        l = redlock.acquire(key, Workload.TTL, HELD_MAX_WAIT);
        lease = l;
      }
      return l;
    }

    @TearDown(Level.Iteration)
    public void release() {
      if (lease != null) {
        lease.release();
        lease = null;
      }
    }
  }

  @Benchmark
  public boolean cycle(Quorum quorum, Key key, Recorder recorder) {
    long start = System.nanoTime();
    Optional<Lease> lease = quorum.redlock.tryAcquire(key.key, Workload.TTL);
    long acquired = System.nanoTime() - start;
    if (lease.isEmpty()) {
      recorder.failed();
      return false;
    }
    recorder.acquired(acquired);
    if (!lease.get().release().complete()) {
      recorder.unconfirmed();
    }
    return true;
  }

  @Benchmark
  public boolean keptAliveCycle(Quorum quorum, Key key, Recorder recorder) {
    long start = System.nanoTime();
    Optional<Lease> lease = quorum.redlock.tryAcquire(key.key, Workload.TTL);
    long acquired = System.nanoTime() - start;
    if (lease.isEmpty()) {
      recorder.failed();
      return false;
    }
    recorder.acquired(acquired);
    Lease held = lease.get().keepAlive();
    if (!held.release().complete()) {
      recorder.unconfirmed();
    }
    return true;
  }

  @Benchmark
  public boolean asyncCycle(Quorum quorum, Key key, Recorder recorder) {
    long start = System.nanoTime();
    Optional<Lease> lease = quorum.redlock.tryAcquireAsync(key.key, Workload.TTL).join();
    long acquired = System.nanoTime() - start;
    if (lease.isEmpty()) {
      recorder.failed();
      return false;
    }
    recorder.acquired(acquired);
    if (!lease.get().releaseAsync().join().complete()) {
      recorder.unconfirmed();
    }
    return true;
  }

  @Benchmark
  public boolean renewal(Held held, Recorder recorder) throws InterruptedException {
    Lease lease = held.lease();
    long start = System.nanoTime();
    boolean extended = lease.extend(Workload.TTL);
    return record(recorder, extended, System.nanoTime() - start);
  }

  @Benchmark
  public boolean renewalAsync(Held held, Recorder recorder) throws InterruptedException {
    Lease lease = held.lease();
    long start = System.nanoTime();
    boolean extended = lease.extendAsync(Workload.TTL).join();
    return record(recorder, extended, System.nanoTime() - start);
  }

  private static boolean record(Recorder recorder, boolean extended, long nanos) {
    if (extended) {
      recorder.acquired(nanos);
    } else {
      recorder.failed();
    }
    return extended;
  }
}
