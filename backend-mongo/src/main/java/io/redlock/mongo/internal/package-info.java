/**
 * Implementation of the MongoDB backend: connection-string parsing, status reads and the
 * translation of driver errors. Not an API: use {@link io.redlock.mongo.MongoLockNode}.
 */
package io.redlock.mongo.internal;
