/**
 * Helpers for backends: the SPI's argument checks ({@link
 * io.redlock.spi.support.LockNodeArguments}), replies for blocking and asynchronous drivers ({@link
 * io.redlock.spi.support.Replies}), and the listeners of release notifications ({@link
 * io.redlock.spi.support.ReleaseListeners}). Not part of the backend contract itself, which is
 * {@link io.redlock.spi}.
 */
package io.redlock.spi.support;
