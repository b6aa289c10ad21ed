/**
 * Micrometer metrics of a Redlock: {@link io.redlock.micrometer.RedlockMetrics} (a {@link
 * io.redlock.RedlockListener}) and {@link io.redlock.micrometer.RedlockNodeMetrics} (node-health
 * gauges).
 */
package io.redlock.micrometer;
