/**
 * A fault-injection suite for Redlock: a client JVM ({@link io.redlock.chaos.ChaosClient}) that
 * writes one line per event to its own file ({@link io.redlock.chaos.EventLog}), the parsed
 * histories ({@link io.redlock.chaos.History}) and the checkers C1..C5 that judge them.
 *
 * <p>Times in the event files are {@link System#nanoTime()} values. On Linux that is {@code
 * CLOCK_MONOTONIC}, one clock for every process of the machine, so the values of different JVMs on
 * one machine can be compared directly; this suite runs all its clients on one machine (loopback
 * only) and relies on that. A wall clock would not do: it can be stepped, and an event's order
 * across JVMs is exactly what the checkers judge.
 */
package io.redlock.chaos;
