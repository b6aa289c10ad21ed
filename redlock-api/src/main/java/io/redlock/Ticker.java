package io.redlock;

/**
 * A monotonic time source in nanoseconds, used for every elapsed-time measurement (never wall
 * time). Inject a fake one in tests to drive timing deterministically.
 */
@FunctionalInterface
public interface Ticker {
  /** Nanoseconds from an arbitrary fixed origin; only differences are meaningful. */
  long read();

  /** The JVM's monotonic clock, {@link System#nanoTime()}. */
  static Ticker system() {
    return System::nanoTime;
  }
}
