package io.redlock.sql.internal;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The values of this library's {@code redlock.*} options in a JDBC URL or a {@code postgresql://}
 * URI, parsed the same way by both SQL backends, with messages naming the option and what it takes.
 */
public final class SqlOptions {
  /** The prefix that marks this library's options. */
  public static final String PREFIX = "redlock.";

  private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m)?");

  private SqlOptions() {}

  /** A boolean option. */
  public static boolean parseBoolean(String option, String value) {
    return parseBoolean(option, value, "true or false");
  }

  /** A boolean option; {@code allowed} names the values it takes, for the message. */
  public static boolean parseBoolean(String option, String value, String allowed) {
    return switch (value.toLowerCase(Locale.ROOT)) {
      case "true", "yes", "1" -> true;
      case "false", "no", "0" -> false;
      default ->
          throw new IllegalArgumentException(
              PREFIX + option + " must be " + allowed + ", got '" + value + "'");
    };
  }

  /** An integer option within bounds. */
  public static int parseInt(String option, String value, int min, int max) {
    try {
      int n = Integer.parseInt(value.strip());
      if (n < min || n > max) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          PREFIX
              + option
              + " must be a whole number from "
              + min
              + " to "
              + max
              + ", got '"
              + value
              + "'");
    }
  }

  /** A duration option: {@code 500ms}, {@code 2s}, {@code 1m}, plain milliseconds, or ISO-8601. */
  public static Duration parseDuration(String option, String value) {
    String v = value.strip().toLowerCase(Locale.ROOT);
    Matcher m = DURATION.matcher(v);
    try {
      if (m.matches()) {
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "ms" : m.group(2);
        return switch (unit) {
          case "s" -> Duration.ofSeconds(n);
          case "m" -> Duration.ofMinutes(n);
          default -> Duration.ofMillis(n);
        };
      }
      return Duration.parse(value.strip());
    } catch (DateTimeParseException | ArithmeticException | NumberFormatException e) {
      throw new IllegalArgumentException(
          PREFIX + option + " must be a duration such as 500ms, 2s or 1m, got '" + value + "'");
    }
  }
}
