/** Implementation of the {@code redlock} tool; not an API. */
package io.redlock.cli.internal;
