package io.redlock.sql.internal;

import java.util.regex.Pattern;

/**
 * A validated table name, optionally schema-qualified ({@code schema.table}). Only plain
 * identifiers are accepted (letters, digits, underscores, not starting with a digit, at most 63
 * characters each), so the name can be put into SQL text without quoting and without any chance of
 * injection.
 *
 * @param value the name as written
 */
public record TableName(String value) {
  /** The default table name. */
  public static final String DEFAULT = "redlock_locks";

  private static final String IDENTIFIER = "[A-Za-z_][A-Za-z0-9_]{0,62}";
  private static final Pattern PATTERN = Pattern.compile(IDENTIFIER + "(\\." + IDENTIFIER + ")?");

  /** Validates. */
  public TableName {
    if (value == null || !PATTERN.matcher(value).matches()) {
      throw new IllegalArgumentException(
          "invalid table name "
              + (value == null ? "null" : "'" + value + "'")
              + ": use letters, digits and underscores, not starting with a digit, at most 63"
              + " characters, optionally qualified by a schema as schema.table (e.g. "
              + DEFAULT
              + " or locks.redlock_locks)");
    }
  }

  @Override
  public String toString() {
    return value;
  }
}
