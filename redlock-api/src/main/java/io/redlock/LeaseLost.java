package io.redlock;

import java.util.Objects;

/**
 * Why a lease was lost: given to {@link Lease#onLost} listeners and carried by {@link
 * LeaseLostException}.
 *
 * @param resource the lease's resource
 * @param reason why
 * @param detail in words, naming nodes where it concerns them
 */
public record LeaseLost(String resource, Reason reason, String detail) {

  /** Validates. */
  public LeaseLost {
    Objects.requireNonNull(resource, "resource");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(detail, "detail");
  }

  /** Why a lease was lost. */
  public enum Reason {
    /** A majority of nodes answered that the key no longer holds this lease's token. */
    TOKEN_GONE,
    /** Extensions kept failing because too few nodes answered; less than the margin was left. */
    UNREACHABLE,
    /** The validity ran out before an extension succeeded (or none was asked for). */
    EXPIRED,
    /** The Redlock was closed while the lease was held. */
    CLOSED,
    /** Released by its holder: only {@link Lease#checkValid()} reports it, never a listener. */
    RELEASED
  }

  @Override
  public String toString() {
    return "lease on '" + resource + "' lost (" + reason + "): " + detail;
  }
}
