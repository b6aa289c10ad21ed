package io.redlock.it;

import io.redlock.Lease;
import io.redlock.Redlock;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * Runs the library's hot paths on virtual threads, for {@link VirtualThreadPinningTest}: started in
 * a JVM of Java 21 or later (virtual threads) with a recording file and the node URIs as arguments.
 * It records JFR's {@code jdk.VirtualThreadPinned} events at a 0 ms threshold, prints them, and
 * exits with 3 if there are any. Built for Java 17, so the virtual-thread executor is found by
 * reflection.
 */
public final class VirtualThreadsMain {
  private VirtualThreadsMain() {}

  public static void main(String[] args) throws Exception {
    Path dump = Path.of(args[0]);
    List<String> uris = Arrays.asList(args).subList(1, args.length);
    ExecutorService virtual =
        (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
    try (Redlock redlock = Redlock.builder().nodeUris(uris).build();
        Recording recording = new Recording()) {
      // Warm up on this platform thread first: a class initialized while a virtual thread waits
      // for it pins that thread once (the JVM's doing, not a blocking call of the library).
      for (int i = 0; i < 20; i++) {
        Lease warm = redlock.acquire("warm-" + i, Duration.ofSeconds(5), Duration.ofSeconds(5));
        warm.extend(Duration.ofSeconds(5));
        warm.release();
      }
      Lock warmLock = redlock.asLock("warm-lock", Duration.ofSeconds(5));
      warmLock.lock();
      warmLock.unlock();
      // ... and once on a virtual thread, which initializes the JDK's virtual-thread socket poller
      virtual
          .submit(
              () -> {
                redlock.acquire("warm-vt", Duration.ofSeconds(5), Duration.ofSeconds(5)).release();
                return null;
              })
          .get();

      recording.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
      recording.start();
      List<Future<?>> work = new ArrayList<>();
      for (int t = 0; t < 64; t++) {
        int thread = t;
        work.add(
            virtual.submit(
                () -> {
                  for (int i = 0; i < 30; i++) {
                    String key = "vt-" + thread + "-" + i;
                    Lease lease =
                        redlock.acquire(key, Duration.ofSeconds(5), Duration.ofSeconds(5));
                    lease.extend(Duration.ofSeconds(5));
                    lease.release();
                  }
                  Lock lock = redlock.asLock("vt-shared", Duration.ofSeconds(5));
                  for (int i = 0; i < 3; i++) {
                    lock.lock(); // contended by 64 threads: waits park the virtual thread
                    lock.unlock();
                  }
                  return null;
                }));
      }
      for (Future<?> f : work) {
        f.get(120, TimeUnit.SECONDS);
      }
      recording.stop();
      recording.dump(dump);
    } finally {
      virtual.shutdown();
    }
    List<RecordedEvent> pinned = new ArrayList<>();
    for (RecordedEvent e : RecordingFile.readAllEvents(dump)) {
      String reason = e.hasField("pinnedReason") ? e.getString("pinnedReason") : "";
      if (reason.contains("initialization of") || reason.contains("<clinit>")) {
        // the JVM initializing a class that another thread is initializing: once, not ours
        System.out.println("ignored (class initialization): " + reason);
        continue;
      }
      pinned.add(e);
      System.out.println("PINNED " + e);
    }
    System.out.println("virtual threads done: " + pinned.size() + " pinned");
    System.exit(pinned.isEmpty() ? 0 : 3);
  }
}
