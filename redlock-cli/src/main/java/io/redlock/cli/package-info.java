/**
 * The {@code redlock} command-line tool; its implementation is in {@code io.redlock.cli.internal}.
 */
package io.redlock.cli;
