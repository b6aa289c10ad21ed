/**
 * The MongoDB backend: {@link io.redlock.mongo.MongoLockNode} is one MongoDB deployment as a
 * Redlock node, created from a {@code mongodb://} or {@code mongodb+srv://} connection string or
 * from a {@code MongoClient} you own. Each lock is one document whose expiry is judged by the
 * server's clock inside every operation.
 */
package io.redlock.mongo;
