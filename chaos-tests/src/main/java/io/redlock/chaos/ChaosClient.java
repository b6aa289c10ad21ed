package io.redlock.chaos;

import io.redlock.Lease;
import io.redlock.LockTimeoutException;
import io.redlock.NodeHealth;
import io.redlock.Redlock;
import io.redlock.RedlockBuilder;
import io.redlock.RedlockException;
import io.redlock.ReleaseOutcome;
import io.redlock.redis.RedisFencedWrites;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import redis.clients.jedis.Jedis;

/**
 * A client JVM of the chaos suite. It connects, writes {@code S} to its event file, waits for its
 * go file ({@code "<start nanos> <until nanos>"}, written by the test), then runs {@code threads}
 * workers that each loop until the deadline or {@code maxOps}: acquire, increment the counter with
 * a non-atomic read-modify-write (if a counter store is given), release. Every event is one line of
 * its event file ({@link EventLog}).
 *
 * <p>Arguments: {@code --jvm=NAME --out=EVENTS --go=GOFILE} and the {@link ClientOptions}.
 *
 * <p>It never outlives the test: it halts when its parent process is gone, and {@code grace} after
 * its deadline whatever it is doing.
 */
public final class ChaosClient {
  private static final long WARM_UP_MILLIS = 1_000;

  private final String jvm;
  private final ClientOptions o;
  private final EventLog log;
  private final Redlock redlock;
  private final AtomicBoolean longHoldTaken = new AtomicBoolean();
  private volatile long start;
  private volatile long until;

  private ChaosClient(String jvm, ClientOptions o, EventLog log, Redlock redlock) {
    this.jvm = jvm;
    this.o = o;
    this.log = log;
    this.redlock = redlock;
  }

  /** Runs a client; see the class comment for the arguments. */
  public static void main(String[] args) throws Exception {
    String jvm = require(args, "jvm");
    Path out = Path.of(require(args, "out"));
    Path go = Path.of(require(args, "go"));
    ClientOptions o = ClientOptions.parse(args);
    watchParent();
    int status = 0;
    try (EventLog log = new EventLog(out, jvm);
        Redlock redlock = build(o)) {
      ChaosClient client = new ChaosClient(jvm, o, log, redlock);
      client.warmUp();
      log.started(ProcessHandle.current().pid(), System.nanoTime());
      if (!client.awaitGo(go)) {
        System.err.println(jvm + ": no go file within 120 s; exiting");
        status = 2;
      } else {
        client.run();
        log.done(System.nanoTime());
      }
    } catch (Throwable t) {
      t.printStackTrace();
      status = 1;
    }
    // the engine's and drivers' threads must not keep the JVM alive
    Runtime.getRuntime().halt(status);
  }

  static Redlock build(ClientOptions o) {
    RedlockBuilder b =
        Redlock.builder()
            .nodeUris(o.nodes)
            .nodeTimeout(Duration.ofMillis(o.nodeTimeoutMillis))
            .retry(
                o.retryAttempts,
                Duration.ofMillis(o.retryMinMillis),
                Duration.ofMillis(o.retryMaxMillis))
            .fencing(o.fencing);
    if (o.quarantineMillis > 0) {
      b.restartQuarantine(Duration.ofMillis(o.quarantineMillis));
    }
    return b.build();
  }

  private static String require(String[] args, String name) {
    String v = ClientOptions.value(args, name);
    if (v == null || v.isEmpty()) {
      throw new IllegalArgumentException("missing --" + name + "=...");
    }
    return v;
  }

  /** Halts this JVM once the test's JVM that started it is gone (a crashed or killed test). */
  private static void watchParent() {
    Optional<ProcessHandle> parent = ProcessHandle.current().parent();
    Thread t =
        new Thread(
            () -> {
              while (true) {
                if (parent.isEmpty() || !parent.get().isAlive()) {
                  Runtime.getRuntime().halt(3);
                }
                sleepQuietly(500);
              }
            },
            "watch-parent");
    t.setDaemon(true);
    t.start();
  }

  /**
   * Opens connections, loads classes and warms the JIT for up to {@value #WARM_UP_MILLIS} ms before
   * the clock starts, on keys of its own; these leases are not logged.
   */
  private void warmUp() {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WARM_UP_MILLIS);
    for (int i = 0; i < 2_000 && System.nanoTime() - end < 0; i++) {
      try {
        redlock
            .tryAcquire("warmup-" + jvm + "-" + (i % 3), Duration.ofMillis(o.ttlMillis))
            .ifPresent(Lease::release);
      } catch (RuntimeException ignored) {
        // quarantined or unreachable nodes: the run will show it
      }
    }
  }

  private boolean awaitGo(Path go) throws IOException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (System.nanoTime() - deadline < 0) {
      if (Files.exists(go)) {
        String[] p = Files.readString(go, StandardCharsets.US_ASCII).strip().split(" ");
        start = Long.parseLong(p[0]);
        until = Long.parseLong(p[1]);
        return true;
      }
      sleepQuietly(2);
    }
    return false;
  }

  private void run() throws InterruptedException {
    Thread halt =
        new Thread(
            () -> {
              long wait = until + TimeUnit.MILLISECONDS.toNanos(o.graceMillis) - System.nanoTime();
              sleepQuietly(Math.max(0, wait / 1_000_000));
              System.err.println(
                  jvm + ": still running " + o.graceMillis + " ms after the deadline; halting");
              Runtime.getRuntime().halt(4);
            },
            "halt-at-deadline");
    halt.setDaemon(true);
    halt.start();
    if (o.healthEveryMillis > 0) {
      Thread h = new Thread(this::sampleHealth, "health");
      h.setDaemon(true);
      h.start();
    }
    List<Thread> workers = new ArrayList<>();
    for (int i = 0; i < o.threads; i++) {
      String name = "t" + i;
      Thread t = new Thread(() -> work(name), name);
      workers.add(t);
      t.start();
    }
    for (Thread t : workers) {
      t.join();
    }
  }

  private void sampleHealth() {
    while (System.nanoTime() - until < 0) {
      StringBuilder states = new StringBuilder();
      StringBuilder inFlight = new StringBuilder();
      for (NodeHealth h : redlock.health()) {
        states.append(
            switch (h.state()) {
              case UP -> 'U';
              case DOWN -> 'D';
              case UNKNOWN -> '?';
            });
        inFlight.append(inFlight.length() == 0 ? "" : ",").append(h.callsInFlight());
      }
      log.health(System.nanoTime(), states.toString(), inFlight.toString());
      sleepQuietly(o.healthEveryMillis);
    }
  }

  private void work(String thread) {
    Jedis counter = o.counter.isEmpty() ? null : new Jedis(URI.create(o.counter));
    RedisFencedWrites fenced =
        counter != null && o.fencedWrites ? RedisFencedWrites.over(counter) : null;
    String resource = o.distinct ? o.resource + "-" + jvm + "-" + thread : o.resource;
    Duration ttl = Duration.ofMillis(o.ttlMillis);
    try {
      for (int i = 0; i < o.maxOps && System.nanoTime() - until < 0; i++) {
        Lease lease;
        try {
          if (o.maxWaitMillis == 0) {
            lease = redlock.tryAcquire(resource, ttl).orElse(null);
            if (lease == null) {
              log.failed(thread, resource, System.nanoTime(), "EMPTY");
              continue;
            }
          } else {
            long left = until - System.nanoTime();
            if (left <= 0) {
              break;
            }
            long wait = Math.min(TimeUnit.MILLISECONDS.toNanos(o.maxWaitMillis), left);
            lease = redlock.acquire(resource, ttl, Duration.ofNanos(wait));
          }
        } catch (LockTimeoutException e) {
          log.failed(thread, resource, System.nanoTime(), String.valueOf(e.reason()));
          continue;
        } catch (RedlockException e) {
          log.failed(thread, resource, System.nanoTime(), e.getClass().getSimpleName());
          sleepQuietly(10);
          continue;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
        // System.nanoTime(): CLOCK_MONOTONIC on Linux, one clock for every JVM of this machine,
        // so the checkers compare these times across client JVMs (see package-info.java).
        long grant = System.nanoTime();
        Duration remaining = lease.remainingValidity();
        long validEnd = System.nanoTime() + remaining.toNanos(); // read after: errs late (strict)
        long fence = o.fencing ? lease.fencingToken() : 0;
        log.granted(thread, resource, lease.token(), fence, grant, validEnd);
        if (counter != null) {
          increment(thread, counter, fenced, resource, lease, fence);
        }
        if (o.longHoldAfterMillis >= 0
            && System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(o.longHoldAfterMillis)
            && longHoldTaken.compareAndSet(false, true)) {
          log.longHold(thread, lease.token(), System.nanoTime());
          sleepQuietly(o.longHoldMillis); // the test kills this JVM meanwhile
        }
        long call = System.nanoTime();
        ReleaseOutcome r = lease.release();
        long done = System.nanoTime();
        log.released(thread, lease.token(), call, done, r.answered(), r.deleted(), r.nodes());
        if (o.thinkMillis > 0) {
          sleepQuietly(o.thinkMillis);
        }
      }
    } catch (RuntimeException e) {
      log.error(thread, System.nanoTime(), e);
      e.printStackTrace();
    } finally {
      if (counter != null) {
        counter.close();
      }
    }
  }

  /**
   * The deliberately non-atomic read-modify-write: GET, a pause, SET value + 1 (or a fenced write
   * carrying the lease's token, which the store refuses if a newer lease wrote first).
   */
  private void increment(
      String thread,
      Jedis counter,
      RedisFencedWrites fenced,
      String resource,
      Lease lease,
      long fence) {
    String key = counterKey(resource);
    long next = -1;
    String outcome;
    try {
      String read = counter.get(key);
      next = (read == null ? 0 : Long.parseLong(read)) + 1;
      sleepQuietly(o.workMillis);
      if (fenced != null) {
        outcome = fenced.trySet(key, Long.toString(next), fence) ? "ok" : "stale";
      } else {
        counter.set(key, Long.toString(next));
        outcome = "ok";
      }
    } catch (RuntimeException e) {
      outcome = "error";
      log.error(thread, System.nanoTime(), e);
    }
    log.worked(thread, lease.token(), System.nanoTime(), outcome, next);
  }

  /** The counter key of a resource in the counter store. */
  public static String counterKey(String resource) {
    return "counter:" + resource;
  }

  private static void sleepQuietly(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
