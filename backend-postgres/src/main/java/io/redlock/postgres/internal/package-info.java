/**
 * Implementation of the reactive PostgreSQL backend: URI parsing, the connections and their event
 * loop, the calls, release notifications and the translation of errors. Not an API: use {@link
 * io.redlock.postgres.PostgresLockNode}.
 */
package io.redlock.postgres.internal;
