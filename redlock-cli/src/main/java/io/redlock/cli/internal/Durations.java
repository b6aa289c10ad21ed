package io.redlock.cli.internal;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Parses and prints durations as people write them: {@code 30s}, {@code 500ms}, {@code 1.5s},
 * {@code 2m}, {@code 1m30s}, {@code 1h}, or ISO-8601 ({@code PT30S}). A bare number is refused:
 * seconds or milliseconds would be a guess. A sign is read, so that a negative value can be refused
 * by the option that gets it with "must be positive" rather than "is not a duration".
 */
final class Durations implements ITypeConverter<Duration> {
  /** One amount and its unit; "ms" before "m" and "s", so that "1ms" is not "1m" + "s". */
  private static final String PART = "(\\d+(?:\\.\\d+)?)\\s*(ns|us|µs|ms|s|m|h|d)";

  private static final Pattern PARTS =
      Pattern.compile("(?:" + PART + "\\s*)+", Pattern.CASE_INSENSITIVE);
  private static final Pattern ONE_PART = Pattern.compile(PART, Pattern.CASE_INSENSITIVE);

  /** An ISO-8601 duration inside a library's message, e.g. "ttl PT0.001S leaves...". */
  private static final Pattern ISO_IN_TEXT =
      Pattern.compile("(?<![A-Za-z0-9])-?PT(?:-?\\d+H)?(?:-?\\d+M)?(?:-?\\d+(?:\\.\\d+)?S)?\\b");

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
    boolean negative = text.startsWith("-");
    String unsigned = negative || text.startsWith("+") ? text.substring(1).strip() : text;
    if (!unsigned.isEmpty() && PARTS.matcher(unsigned).matches()) {
      BigDecimal nanos = BigDecimal.ZERO;
      Matcher m = ONE_PART.matcher(unsigned);
      while (m.find()) {
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
        nanos = nanos.add(new BigDecimal(m.group(1)).multiply(BigDecimal.valueOf(nanosPerUnit)));
      }
      if (nanos.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
        throw new IllegalArgumentException("duration '" + value + "' is too long");
      }
      long n = nanos.setScale(0, java.math.RoundingMode.HALF_UP).longValueExact();
      return Duration.ofNanos(negative ? -n : n);
    }
    if (unsigned.toUpperCase(Locale.ROOT).startsWith("P")) {
      try {
        return Duration.parse(text);
      } catch (DateTimeParseException e) {
        // fall through to the message below
      }
    }
    if (unsigned.matches("\\d+(\\.\\d+)?")) {
      throw new IllegalArgumentException(
          "duration '"
              + value
              + "' has no unit; write e.g. "
              + unsigned
              + "s or "
              + unsigned
              + "ms");
    }
    throw new IllegalArgumentException(
        // no ISO-8601 example: the tool prints durations in messages as people write them, and
        // PT30S would come out as a second 30s
        "'"
            + value
            + "' is not a duration; write e.g. 30s, 500ms, 1.5s, 2m, 1m30s, 1h, or ISO-8601");
  }

  /**
   * A duration as a person would type it, and as {@link #parse} reads it back exactly: {@code 1ms},
   * {@code 30s}, {@code 1.5s}, {@code 1m30s}, {@code 2h}, {@code 250us}, {@code -5s}. For echoing
   * settings in messages; {@link #format} is for measurements.
   */
  static String human(Duration d) {
    if (d.isNegative()) {
      return "-" + human(d.negated());
    }
    if (d.isZero()) {
      return "0s";
    }
    long nanos;
    try {
      nanos = d.toNanos();
    } catch (ArithmeticException e) {
      return d.toDays() + "d";
    }
    if (nanos % 1_000_000_000L != 0) {
      if (nanos >= 1_000_000_000L) {
        return decimal(nanos, 1_000_000_000L, "s");
      }
      if (nanos >= 1_000_000L) {
        return decimal(nanos, 1_000_000L, "ms");
      }
      if (nanos >= 1_000L) {
        return decimal(nanos, 1_000L, "µs");
      }
      return nanos + "ns";
    }
    long s = nanos / 1_000_000_000L;
    StringBuilder sb = new StringBuilder();
    long days = s / 86_400;
    long hours = s / 3_600 % 24;
    long minutes = s / 60 % 60;
    long seconds = s % 60;
    if (days > 0) {
      sb.append(days).append('d');
    }
    if (hours > 0) {
      sb.append(hours).append('h');
    }
    if (minutes > 0) {
      sb.append(minutes).append('m');
    }
    if (seconds > 0) {
      sb.append(seconds).append('s');
    }
    return sb.toString();
  }

  /** E.g. 1_500_000_000 ns in seconds: "1.5s"; exact, without trailing zeros. */
  private static String decimal(long nanos, long perUnit, String unit) {
    return BigDecimal.valueOf(nanos)
            .divide(BigDecimal.valueOf(perUnit))
            .stripTrailingZeros()
            .toPlainString()
        + unit;
  }

  /**
   * Rewrites ISO-8601 durations in a message (the library's, e.g. "ttl PT0.001S leaves no
   * validity") as people write them ("ttl 1ms leaves no validity").
   */
  static String humanize(String message) {
    if (message == null || !message.contains("PT")) {
      return message;
    }
    Matcher m = ISO_IN_TEXT.matcher(message);
    StringBuilder sb = new StringBuilder();
    while (m.find()) {
      String replacement = m.group();
      try {
        replacement = human(Duration.parse(m.group()));
      } catch (DateTimeParseException e) {
        // not a duration after all: keep it
      }
      m.appendReplacement(sb, Matcher.quoteReplacement(replacement));
    }
    m.appendTail(sb);
    return sb.toString();
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

  /** The inverse of {@link #millis(Duration)}; null for null. */
  static Duration ofMillis(Double millis) {
    return millis == null ? null : Duration.ofNanos(Math.round(millis * 1e6));
  }

  /** Milliseconds with three decimals, for JSON. */
  static double millis(long nanos) {
    return Math.round(nanos / 1_000.0) / 1_000.0;
  }

  /** A usage error unless {@code value} of {@code option} is positive. */
  static void requirePositive(String option, Duration value) {
    if (value.isNegative() || value.isZero()) {
      throw CliException.usage("%s must be positive, got %s; e.g. %1$s 30s", option, human(value));
    }
  }
}
