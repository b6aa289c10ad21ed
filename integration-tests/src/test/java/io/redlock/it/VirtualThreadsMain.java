package io.redlock.it;

import io.redlock.Lease;
import io.redlock.Redlock;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
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
      Thread contender = // and contended, so that the waiting path's classes are loaded too
          new Thread(
              () -> {
                Lock lock = redlock.asLock("warm-lock", Duration.ofSeconds(5));
                lock.lock();
                lock.unlock();
              });
      contender.start();
      Thread.sleep(100);
      warmLock.unlock();
      contender.join(30_000);
      // ... and once on a virtual thread, after a socket read that surely parks it, which
      // initializes the JDK's virtual-thread socket poller (its first use pins, once)
      virtual
          .submit(
              () -> {
                parkOnASocket();
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
      if (loadingAClass(e)) {
        // the first use of a class on a virtual thread loads it under the class loader's monitor,
        // once per class: the JVM's doing, not a blocking call of the library
        System.out.println("ignored (class loading): " + e.getStackTrace().getFrames().get(0));
        continue;
      }
      pinned.add(e);
      System.out.println("PINNED " + e);
    }
    System.out.println("virtual threads done: " + pinned.size() + " pinned");
    System.exit(pinned.isEmpty() ? 0 : 3);
  }

  /**
   * A read with a timeout on a loopback socket that gets no data: the reader parks, then gives up.
   */
  private static void parkOnASocket() throws IOException {
    try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
        Socket accepted = server.accept()) {
      client.setSoTimeout(20);
      client.getInputStream().read();
    } catch (SocketTimeoutException expected) {
      // parked for 20 ms, as wanted
    }
  }

  /** Whether the pinned frame is a class loader loading a class (the top frames only). */
  private static boolean loadingAClass(RecordedEvent e) {
    if (e.getStackTrace() == null || e.getStackTrace().getFrames().isEmpty()) {
      return false;
    }
    String type = e.getStackTrace().getFrames().get(0).getMethod().getType().getName();
    String method = e.getStackTrace().getFrames().get(0).getMethod().getName();
    return (type.equals("jdk.internal.loader.BuiltinClassLoader")
            || type.equals("java.lang.ClassLoader"))
        && method.startsWith("loadClass");
  }
}
