package io.redlock.chaos;

/**
 * What one checker concluded.
 *
 * @param check the checker's name, {@code C1} .. {@code C5}
 * @param verdict pass, fail, or not applicable
 * @param detail what was checked and, on failure, the first counterexample
 */
public record CheckResult(String check, Verdict verdict, String detail) {
  /** A checker's conclusion. */
  public enum Verdict {
    /** The property held. */
    PASS,
    /** The property was violated; {@link #detail} names a counterexample. */
    FAIL,
    /** Nothing to check in this scenario (e.g. fencing tokens without fencing). */
    NA
  }

  /** A passing result. */
  public static CheckResult pass(String check, String detail) {
    return new CheckResult(check, Verdict.PASS, detail);
  }

  /** A failing result. */
  public static CheckResult fail(String check, String detail) {
    return new CheckResult(check, Verdict.FAIL, detail);
  }

  /** A result for a check that does not apply. */
  public static CheckResult na(String check, String detail) {
    return new CheckResult(check, Verdict.NA, detail);
  }

  /** True if the verdict is {@link Verdict#PASS}. */
  public boolean passed() {
    return verdict == Verdict.PASS;
  }

  /** True if the verdict is {@link Verdict#FAIL}. */
  public boolean failed() {
    return verdict == Verdict.FAIL;
  }

  @Override
  public String toString() {
    return check + " " + verdict + ": " + detail;
  }
}
