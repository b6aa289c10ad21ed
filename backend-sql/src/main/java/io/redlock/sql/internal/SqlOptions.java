package io.redlock.sql.internal;

import io.redlock.spi.NodeUri;
import java.time.Duration;

/**
 * The values of this library's {@code redlock.*} options, read as every backend reads its options
 * ({@link NodeUri#bool}, {@link NodeUri#integer}, {@link NodeUri#duration}) under their full name.
 */
public final class SqlOptions {
  /** The prefix that marks this library's options. */
  public static final String PREFIX = "redlock.";

  private SqlOptions() {}

  /** A boolean option: true/yes/1 or false/no/0. */
  public static boolean parseBoolean(String option, String value) {
    return NodeUri.bool(PREFIX + option, value);
  }

  /** An integer option within bounds. */
  public static int parseInt(String option, String value, int min, int max) {
    return NodeUri.integer(PREFIX + option, value, min, max);
  }

  /** A duration option: {@code 500ms}, {@code 2s}, {@code 1m}, plain milliseconds, or ISO-8601. */
  public static Duration parseDuration(String option, String value) {
    return NodeUri.duration(PREFIX + option, value);
  }
}
