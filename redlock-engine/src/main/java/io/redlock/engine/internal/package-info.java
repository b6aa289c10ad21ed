/**
 * The quorum engine behind {@link io.redlock.Redlock}: fan-out to every node, majority vote, drift
 * and validity arithmetic, retry, extension and release. Not an API: only {@link
 * io.redlock.engine.internal.QuorumEngineProvider} is public, because {@link
 * java.util.ServiceLoader} needs it; use {@link io.redlock.Redlock#builder()}.
 */
package io.redlock.engine.internal;
