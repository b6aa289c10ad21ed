package io.redlock.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.redlock.Lease;
import io.redlock.Redlock;
import io.redlock.RedlockBuilder;
import io.redlock.chaos.CheckResult.Verdict;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * One scenario's run: its folder under {@code target/chaos}, its client JVMs (all killed by {@link
 * #close()}), the fault log, the history, and the summary line printed as
 *
 * <pre>CHAOS | scenario | duration | grants | faults | C1 | C2 | C3 | C4 | C5</pre>
 *
 * and appended to {@code target/chaos/summary.txt}.
 */
final class ChaosRun implements AutoCloseable {
  static final Path ROOT = Path.of("target", "chaos").toAbsolutePath();

  static {
    try {
      Files.deleteIfExists(ROOT.resolve("summary.txt")); // one summary per test JVM
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private final String scenario;
  private final Path dir;
  private final long created = System.nanoTime();
  private final List<ClientProcess> clients = new ArrayList<>();
  private final List<Path> extraEvents = new ArrayList<>();
  private long start;
  private long until;
  private int faults;

  private ChaosRun(String scenario) {
    this.scenario = scenario;
    this.dir = ROOT.resolve(scenario);
    try {
      if (Files.exists(dir)) {
        try (Stream<Path> files = Files.walk(dir)) {
          files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
      }
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static ChaosRun start(String scenario) {
    return new ChaosRun(scenario);
  }

  /** Starts a client JVM (it connects, then waits for {@link #go}). */
  ClientProcess client(String name, ClientOptions options) {
    ClientProcess c = ClientProcess.start(name, dir, options);
    clients.add(c);
    return c;
  }

  /** An event file written in this JVM (in-process clients), to be read with the clients'. */
  Path inProcessEvents(String name) {
    Path p = dir.resolve(name + ".events");
    extraEvents.add(p);
    return p;
  }

  /** Waits until every client JVM started so far is connected. */
  void awaitReady() {
    for (ClientProcess c : clients) {
      assertThat(c.awaitReady(Budget.CLIENT_READY))
          .as("%s connected within %d ms; its log:%n%s", c, Budget.CLIENT_READY, c.logTail())
          .isTrue();
    }
  }

  /** Starts every client now, to run for {@code runMillis}; returns the start (nanoTime). */
  long go(long runMillis) {
    start = System.nanoTime();
    until = start + TimeUnit.MILLISECONDS.toNanos(runMillis);
    for (ClientProcess c : clients) {
      c.go(start, until);
    }
    return start;
  }

  /** Sets the run's clock without starting anyone (clients started one by one with go). */
  void begin(long runMillis) {
    start = System.nanoTime();
    until = start + TimeUnit.MILLISECONDS.toNanos(runMillis);
  }

  long startNanos() {
    return start;
  }

  long untilNanos() {
    return until;
  }

  /** Notes a fault injected now. */
  long fault(String what) {
    faults++;
    long now = System.nanoTime();
    System.out.printf("CHAOS   %s: fault at +%.3f s: %s%n", scenario, (now - start) / 1e9, what);
    return now;
  }

  /** Notes something that happened now (not a fault). */
  long note(String what) {
    long now = System.nanoTime();
    if (start == 0) {
      System.out.printf("CHAOS   %s: %s%n", scenario, what); // before the go
    } else {
      System.out.printf("CHAOS   %s: +%.3f s: %s%n", scenario, (now - start) / 1e9, what);
    }
    return now;
  }

  /** Sleeps until {@code millis} after the start. */
  void sleepUntil(long millis) throws InterruptedException {
    long wait = start + TimeUnit.MILLISECONDS.toNanos(millis) - System.nanoTime();
    if (wait > 0) {
      TimeUnit.NANOSECONDS.sleep(wait);
    }
  }

  /** Waits for every live client to end by itself after the deadline; asserts it ended cleanly. */
  void awaitClients() {
    for (ClientProcess c : clients) {
      if (c.killed()) {
        continue; // on purpose
      }
      long left = (until - System.nanoTime()) / 1_000_000 + Budget.CLIENT_EXIT;
      int status = c.waitFor(Math.max(0, left));
      assertThat(status).as("%s exit status; its log:%n%s", c, c.logTail()).isZero();
    }
  }

  /** The history of every client of this run. */
  History history() {
    List<Path> files = new ArrayList<>(extraEvents);
    clients.forEach(c -> files.add(c.events()));
    return History.read(files);
  }

  /**
   * A fresh client: builds a Redlock from {@code builder} (connecting first), then acquires {@code
   * resource} with the TTL plus {@link Budget#FRESH_RETRY} as its budget, and releases.
   */
  static LivenessCheck.Fresh freshAcquire(RedlockBuilder builder, String resource, long ttlMillis)
      throws InterruptedException {
    return freshAcquire(builder.build(), resource, ttlMillis);
  }

  /**
   * As {@link #freshAcquire(RedlockBuilder, String, long)}, with a Redlock built beforehand (by
   * scenarios that build it while a node is down, so that its start does not take the CPU from the
   * clients' recovery being measured); closes it.
   */
  static LivenessCheck.Fresh freshAcquire(Redlock built, String resource, long ttlMillis)
      throws InterruptedException {
    long budget = TimeUnit.MILLISECONDS.toNanos(ttlMillis + Budget.FRESH_RETRY);
    try (Redlock redlock = built) {
      long t0 = System.nanoTime();
      try {
        Lease lease =
            redlock.acquire(resource, Duration.ofMillis(ttlMillis), Duration.ofNanos(budget));
        long waited = System.nanoTime() - t0;
        lease.release();
        return new LivenessCheck.Fresh(true, waited, budget);
      } catch (io.redlock.LockTimeoutException e) {
        System.out.println("CHAOS   fresh client failed: " + e.getMessage());
        return new LivenessCheck.Fresh(false, System.nanoTime() - t0, budget);
      }
    }
  }

  /**
   * C5: polls {@code snapshot} every 100 ms until it passes or {@code boundMillis} passed; the last
   * result, with the time it took.
   */
  CheckResult awaitHygiene(Supplier<Map<String, List<String>>> snapshot, long boundMillis)
      throws InterruptedException {
    long t0 = System.nanoTime();
    long deadline = t0 + TimeUnit.MILLISECONDS.toNanos(boundMillis);
    while (true) {
      CheckResult r = HygieneCheck.check(snapshot.get());
      long now = System.nanoTime();
      if (r.passed() || now - deadline > 0) {
        return new CheckResult(
            r.check(),
            r.verdict(),
            r.detail()
                + String.format(
                    " (after %d ms, bound %d ms)", (now - t0) / 1_000_000, boundMillis));
      }
      Thread.sleep(100);
    }
  }

  /**
   * Prints the summary line and each check's detail; appends the line to {@code summary.txt}.
   *
   * @param labels how to print each verdict where it differs from the verdict's name, e.g. "FAIL
   *     (expected)"
   */
  void report(History history, List<CheckResult> checks, Map<String, String> labels) {
    double seconds = (System.nanoTime() - created) / 1e9;
    StringBuilder line =
        new StringBuilder(
            String.format(
                "CHAOS | %-28s | %5.1f s | %6d grants | %d faults",
                scenario, seconds, history.grants().size(), faults));
    for (CheckResult c : checks) {
      String label =
          labels.getOrDefault(c.check(), c.verdict() == Verdict.NA ? "n/a" : c.verdict().name());
      line.append(" | ").append(c.check()).append(' ').append(label);
    }
    System.out.println(line);
    for (CheckResult c : checks) {
      System.out.println("CHAOS   " + c);
    }
    Map<String, Long> reasons =
        history.failures().stream()
            .collect(
                java.util.stream.Collectors.groupingBy(
                    History.Failure::reason,
                    java.util.TreeMap::new,
                    java.util.stream.Collectors.counting()));
    System.out.println(
        "CHAOS   failed acquisitions by reason: "
            + (reasons.isEmpty() ? "none" : reasons)
            + "; lines cut by a kill: "
            + history.cutLines()
            + "; unexpected client errors: "
            + history.marks("E").size());
    try {
      Files.createDirectories(ROOT);
      Files.writeString(
          ROOT.resolve("summary.txt"),
          line + "\n",
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    assertThat(history.marks("E"))
        .as("unexpected errors in the clients (see the NAME.log files in %s)", dir)
        .isEmpty();
  }

  void report(History history, List<CheckResult> checks) {
    report(history, checks, Map.of());
  }

  /** Kills every client still running. */
  @Override
  public void close() {
    for (ClientProcess c : clients) {
      c.close();
    }
  }
}
