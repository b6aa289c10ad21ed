package io.redlock.engine.internal;

import java.lang.instrument.Instrumentation;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import net.bytebuddy.agent.ByteBuddyAgent;
import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.jetbrains.lincheck.datastructures.verifier.EpsilonVerifier;

/**
 * What the Lincheck model-checking tests share: Lincheck's set-up on Java 17, hand-written
 * scenarios, and a scheduler whose tasks run only when a test thread runs them, so that a renewal
 * step is one more operation whose interleavings the model checker explores (and no thread that it
 * does not control runs engine code).
 *
 * <p>Lincheck (org.jetbrains.lincheck) runs each scenario many times, each time under a different
 * thread interleaving it chooses (model checking: it switches threads at shared-memory accesses,
 * locks and parks), and replays a failing one with its full trace. The invariants are checked in
 * the operations and in the {@link Validate} method, which throws; results are not compared with a
 * sequential specification ({@link EpsilonVerifier}).
 */
final class ModelChecking {
  private ModelChecking() {}

  /** Model checking a scenario that builds a Redlock takes seconds on a loaded 2-core machine. */
  private static final long INVOCATION_TIMEOUT_MS = 120_000;

  private static boolean opened;

  /**
   * Lincheck's snapshot of the objects a scenario touches reads private fields of the JDK's
   * classes: on Java 17 that needs java.base opened to it, as {@code --add-opens} would. Opening it
   * here, through the instrumentation Lincheck attaches anyway, keeps the build's JVM arguments as
   * they are.
   */
  static synchronized void openJdkToLincheck() {
    if (opened) {
      return;
    }
    Instrumentation instrumentation = ByteBuddyAgent.install();
    Module base = Object.class.getModule();
    Set<Module> to = Set.of(ModelCheckingOptions.class.getModule());
    Map<String, Set<Module>> opens = new HashMap<>();
    for (String pkg : base.getPackages()) {
      opens.put(pkg, to);
    }
    instrumentation.redefineModule(base, Set.of(), opens, opens, Set.of(), Map.of());
    opened = true;
  }

  /**
   * Model-checks {@code scenarios} of {@code test}'s operations, {@code invocations} interleavings
   * each, with no generated scenario.
   */
  static void check(Class<?> test, int invocations, List<ExecutionScenario> scenarios) {
    openJdkToLincheck();
    ModelCheckingOptions options =
        new ModelCheckingOptions()
            .iterations(0)
            .invocationsPerIteration(invocations)
            .verifier(EpsilonVerifier.class)
            .minimizeFailedScenario(false)
            .invocationTimeout$lincheck(INVOCATION_TIMEOUT_MS);
    for (ExecutionScenario s : scenarios) {
      options = options.addCustomScenario(s);
    }
    Map<Object, Integer> levels = quietEngineLogs();
    long start = System.nanoTime();
    long cpu = processCpuNanos();
    try {
      options.check(test);
    } finally {
      restoreLogs(levels);
      System.out.printf(
          "%s: %d scenarios x %d interleavings model-checked in %d ms (%d ms of CPU)%n",
          test.getSimpleName(),
          scenarios.size(),
          invocations,
          (System.nanoTime() - start) / 1_000_000,
          (processCpuNanos() - cpu) / 1_000_000);
    }
  }

  /**
   * CPU time of this JVM so far (all threads), or 0 if unknown: a measure that load does not skew.
   */
  private static long processCpuNanos() {
    java.lang.management.OperatingSystemMXBean os =
        java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getProcessCpuTime() : 0;
  }

  /**
   * The engine's loggers (slf4j-simple in these tests, at DEBUG) off while model checking: every
   * line would be formatted and written under the model checker, thousands of times.
   */
  private static Map<Object, Integer> quietEngineLogs() {
    Map<Object, Integer> levels = new HashMap<>();
    try {
      Object factory = org.slf4j.LoggerFactory.getILoggerFactory();
      Field map = factory.getClass().getDeclaredField("loggerMap");
      map.setAccessible(true);
      for (Map.Entry<?, ?> e : ((Map<?, ?>) map.get(factory)).entrySet()) {
        if (String.valueOf(e.getKey()).startsWith("io.redlock")) {
          Field level = e.getValue().getClass().getDeclaredField("currentLogLevel");
          level.setAccessible(true);
          levels.put(e.getValue(), level.getInt(e.getValue()));
          level.setInt(e.getValue(), 50); // slf4j-simple's LOG_LEVEL_OFF
        }
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      // another binding: its lines are written, which is only slower
    }
    return levels;
  }

  private static void restoreLogs(Map<Object, Integer> levels) {
    for (Map.Entry<Object, Integer> e : levels.entrySet()) {
      try {
        Field level = e.getKey().getClass().getDeclaredField("currentLogLevel");
        level.setAccessible(true);
        level.setInt(e.getKey(), e.getValue());
      } catch (ReflectiveOperationException ignored) {
        // as above
      }
    }
  }

  /**
   * A scenario: {@code init} runs first on one thread, then each entry of {@code threads} on a
   * thread of its own, in parallel; then the {@link Validate} method. Operations are named by
   * method (public, no arguments).
   */
  static ExecutionScenario scenario(Class<?> test, List<String> init, List<List<String>> threads) {
    List<Actor> initActors = actors(test, init);
    List<List<Actor>> parallel = new ArrayList<>();
    for (List<String> t : threads) {
      parallel.add(actors(test, t));
    }
    Actor validation = null;
    for (Method m : test.getMethods()) {
      if (m.isAnnotationPresent(Validate.class)) {
        validation = actor(m);
      }
    }
    return new ExecutionScenario(initActors, parallel, new ArrayList<>(), validation);
  }

  private static List<Actor> actors(Class<?> test, List<String> names) {
    List<Actor> out = new ArrayList<>();
    for (String name : names) {
      try {
        out.add(actor(test.getMethod(name)));
      } catch (NoSuchMethodException e) {
        throw new IllegalArgumentException("no operation " + name + " in " + test, e);
      }
    }
    return out;
  }

  private static Actor actor(Method m) {
    return new Actor(m, List.of(), false, false, false, false, false);
  }

  /** Reads a private field of an engine object (a test in this package, not an API). */
  static Object field(Object owner, String name) {
    try {
      Field f = owner.getClass().getDeclaredField(name);
      f.setAccessible(true);
      return f.get(owner);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError("no field " + name + " in " + owner.getClass(), e);
    }
  }

  /**
   * Makes {@code redlock}'s scheduler keep its tasks for {@link ManualTasks#runDue} instead of
   * running them on its own threads.
   */
  static ManualTasks manualTasks(QuorumRedlock redlock) {
    ManualTasks tasks = new ManualTasks();
    try {
      Field f = Scheduler.class.getDeclaredField("workers");
      f.setAccessible(true);
      f.set(redlock.scheduler, tasks);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError("Scheduler.workers is gone: update ModelChecking", e);
    }
    return tasks;
  }

  /**
   * An executor that starts no thread: it keeps what is scheduled, and a test thread runs it.
   * Scheduled delays are ignored (the tests move a fake ticker instead): every kept task is due.
   */
  static final class ManualTasks extends ScheduledThreadPoolExecutor {
    private final ArrayDeque<Kept> kept = new ArrayDeque<>();

    ManualTasks() {
      super(1);
    }

    /** A task that was scheduled and may be cancelled. */
    private static final class Kept implements ScheduledFuture<Object> {
      final Runnable task;
      volatile boolean cancelled;
      volatile boolean done;

      Kept(Runnable task) {
        this.task = task;
      }

      @Override
      public long getDelay(TimeUnit unit) {
        return 0;
      }

      @Override
      public int compareTo(Delayed o) {
        return 0;
      }

      @Override
      public boolean cancel(boolean mayInterruptIfRunning) {
        if (done) {
          return false;
        }
        cancelled = true;
        return true;
      }

      @Override
      public boolean isCancelled() {
        return cancelled;
      }

      @Override
      public boolean isDone() {
        return done || cancelled;
      }

      @Override
      public Object get() {
        return null;
      }

      @Override
      public Object get(long timeout, TimeUnit unit) {
        return null;
      }
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
      Kept k = new Kept(command);
      synchronized (kept) {
        kept.addLast(k);
      }
      return k;
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
      throw new UnsupportedOperationException("not used by the engine");
    }

    @Override
    public void execute(Runnable command) {
      schedule(command, 0, TimeUnit.NANOSECONDS);
    }

    /** Runs, on the calling thread, the tasks kept now (not those they schedule); how many ran. */
    int runDue() {
      List<Kept> now;
      synchronized (kept) {
        now = new ArrayList<>(kept);
        kept.clear();
      }
      int ran = 0;
      for (Kept k : now) {
        if (!k.cancelled) {
          k.done = true;
          k.task.run();
          ran++;
        }
      }
      return ran;
    }

    /** Tasks kept and not cancelled. */
    int pending() {
      synchronized (kept) {
        int n = 0;
        for (Kept k : kept) {
          if (!k.cancelled) {
            n++;
          }
        }
        return n;
      }
    }
  }

  /** A list that operations on several threads add violations to; the validation throws. */
  static List<String> violations() {
    return Collections.synchronizedList(new ArrayList<>());
  }
}
