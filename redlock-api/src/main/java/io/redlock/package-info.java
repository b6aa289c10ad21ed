/**
 * The user API: build a {@link io.redlock.Redlock} over N nodes, acquire {@link io.redlock.Lease}s,
 * extend and release them. All failures are {@link io.redlock.RedlockException}s, split into
 * transient and non-transient.
 */
package io.redlock;
