package io.redlock.cli.internal;

import java.util.Arrays;

/** Latency samples in nanoseconds, with nearest-rank percentiles. Not thread-safe. */
final class Samples {
  private long[] values = new long[64];
  private int size;
  private boolean sorted = true;

  void add(long nanos) {
    if (size == values.length) {
      values = Arrays.copyOf(values, size * 2);
    }
    values[size++] = nanos;
    sorted = false;
  }

  void addAll(Samples other) {
    for (int i = 0; i < other.size; i++) {
      add(other.values[i]);
    }
  }

  int size() {
    return size;
  }

  /** The nearest-rank percentile, {@code p} in (0, 100]; 0 when there is no sample. */
  long percentile(double p) {
    if (size == 0) {
      return 0;
    }
    if (!sorted) {
      Arrays.sort(values, 0, size);
      sorted = true;
    }
    int rank = (int) Math.ceil(p / 100.0 * size);
    return values[Math.min(size, Math.max(1, rank)) - 1];
  }

  long median() {
    return percentile(50);
  }

  long max() {
    return percentile(100);
  }

  double meanNanos() {
    if (size == 0) {
      return 0;
    }
    double sum = 0;
    for (int i = 0; i < size; i++) {
      sum += values[i];
    }
    return sum / size;
  }
}
