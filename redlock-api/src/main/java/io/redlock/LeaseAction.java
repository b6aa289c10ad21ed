package io.redlock;

/**
 * Work done while holding a lease, see {@link Redlock#withLease}.
 *
 * @param <T> the result
 * @param <E> the checked exception the work may throw ({@code RuntimeException} if none)
 */
@FunctionalInterface
public interface LeaseAction<T, E extends Exception> {
  /**
   * Runs while the lease is held.
   *
   * @param lease the lease; check {@link Lease#isValid()} or use a fencing token before writes that
   *     must not happen after the lease expired
   */
  T run(Lease lease) throws E;
}
