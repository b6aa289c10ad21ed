/**
 * Implementation of the Redis backend: Jedis connection pooling, write-now-read-later replies, the
 * canonical Lua scripts and the translation of Redis errors. Not an API: use {@link
 * io.redlock.redis.RedisLockNode}.
 */
package io.redlock.redis.internal;
