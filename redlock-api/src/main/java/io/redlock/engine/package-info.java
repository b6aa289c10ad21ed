/**
 * How {@link io.redlock.RedlockBuilder} finds the engine that builds a {@link io.redlock.Redlock}:
 * through {@link java.util.ServiceLoader}, from {@code io.redlock:redlock-engine}. Backends do not
 * use this package.
 */
package io.redlock.engine;
