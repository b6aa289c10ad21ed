/**
 * The reactive PostgreSQL backend: {@link io.redlock.postgres.PostgresLockNode} is one PostgreSQL
 * server as a Redlock node, on Vert.x's PostgreSQL client (pipelined, no thread per call), named by
 * a {@code postgresql://} URI. It uses the same table and statements as the JDBC backend's
 * PostgreSQL nodes, so both kinds of node can share a table.
 */
package io.redlock.postgres;
