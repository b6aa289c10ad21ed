package io.redlock.cli.internal;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Parses and prints durations as people write them: {@code 30s}, {@code 500ms}, {@code 1.5s},
 * {@code 2m}, {@code 1h}, or ISO-8601 ({@code PT30S}). A bare number is refused: seconds or
 * milliseconds would be a guess.
 */
final class Durations implements ITypeConverter<Duration> {
  private static final Pattern HUMAN =
      Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ns|us|µs|ms|s|m|h|d)", Pattern.CASE_INSENSITIVE);

  @Override
  public Duration convert(String value) {
    try {
      return parse(value);
    } catch (IllegalArgumentException e) {
      throw new TypeConversionException(e.getMessage());
    }
  }

  static Duration parse(String value) {
    String text = value == null ? "" : value.strip();
    Matcher m = HUMAN.matcher(text);
    if (m.matches()) {
      double amount = Double.parseDouble(m.group(1));
      long nanosPerUnit =
          switch (m.group(2).toLowerCase(Locale.ROOT)) {
            case "ns" -> 1L;
            case "us", "µs" -> 1_000L;
            case "ms" -> 1_000_000L;
            case "s" -> 1_000_000_000L;
            case "m" -> 60_000_000_000L;
            case "h" -> 3_600_000_000_000L;
            default -> 86_400_000_000_000L;
          };
      double nanos = amount * nanosPerUnit;
      if (nanos > Long.MAX_VALUE) {
        throw new IllegalArgumentException("duration '" + value + "' is too long");
      }
      return Duration.ofNanos(Math.round(nanos));
    }
    if (text.toUpperCase(Locale.ROOT).startsWith("P")) {
      try {
        return Duration.parse(text);
      } catch (DateTimeParseException e) {
        // fall through to the message below
      }
    }
    if (text.matches("\\d+(\\.\\d+)?")) {
      throw new IllegalArgumentException(
          "duration '" + value + "' has no unit; write e.g. " + text + "s or " + text + "ms");
    }
    throw new IllegalArgumentException(
        "'" + value + "' is not a duration; write e.g. 30s, 500ms, 1.5s, 2m, 1h or PT30S");
  }

  /** A short human form: 850 µs, 12.3 ms, 1.50 s, 2m30s, 5h12m, 3d4h (rounded down). */
  static String format(Duration d) {
    long nanos = d.toNanos();
    if (nanos < 1_000_000) {
      return String.format(Locale.ROOT, "%d µs", nanos / 1_000);
    }
    if (nanos < 100_000_000) {
      return String.format(Locale.ROOT, "%.1f ms", nanos / 1e6);
    }
    if (nanos < 1_000_000_000) {
      return String.format(Locale.ROOT, "%d ms", nanos / 1_000_000);
    }
    if (nanos < 60_000_000_000L) {
      return String.format(Locale.ROOT, "%.2f s", nanos / 1e9);
    }
    long s = d.toSeconds();
    if (s < 3_600) {
      return (s / 60) + "m" + (s % 60 == 0 ? "" : (s % 60) + "s");
    }
    long m = s / 60;
    if (m < 24 * 60) {
      return (m / 60) + "h" + (m % 60 == 0 ? "" : (m % 60) + "m");
    }
    long h = m / 60;
    return (h / 24) + "d" + (h % 24 == 0 ? "" : (h % 24) + "h");
  }

  /** Milliseconds with three decimals, for JSON. */
  static double millis(Duration d) {
    return Math.round(d.toNanos() / 1_000.0) / 1_000.0;
  }

  /** Milliseconds with three decimals, for JSON. */
  static double millis(long nanos) {
    return Math.round(nanos / 1_000.0) / 1_000.0;
  }
}
