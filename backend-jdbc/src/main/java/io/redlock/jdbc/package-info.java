/**
 * The JDBC backend: {@link io.redlock.jdbc.JdbcLockNode} turns a PostgreSQL, MariaDB/MySQL, SQLite
 * or H2 database into a Redlock node, with expiry on the database server's clock and one atomic
 * statement per operation where the database allows it. Nodes keep fencing counters (a {@code
 * fence} column that outlives each lock) and report their database's incarnation, uptime and
 * durability. URLs with the schemes {@code jdbc:postgresql}, {@code jdbc:mariadb}, {@code
 * jdbc:mysql}, {@code jdbc:sqlite} and {@code jdbc:h2} are also opened through {@link
 * io.redlock.spi.LockNodeProvider}.
 */
package io.redlock.jdbc;
