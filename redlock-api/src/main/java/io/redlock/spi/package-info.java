/**
 * The backend SPI: one {@link io.redlock.spi.LockNode} per store, with conditional insert with
 * expiry, compare-and-delete and compare-and-extend, each answered through a {@link
 * io.redlock.spi.Reply} so that the engine can fan out to many nodes at once. Backends are found by
 * URI scheme through {@link io.redlock.spi.LockNodeProvider}. Prove a backend with the
 * compatibility kit in {@code io.redlock:redlock-tck}.
 */
package io.redlock.spi;
