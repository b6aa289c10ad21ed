/**
 * The Redis backend's {@link java.util.ServiceLoader} provider. Not an API: use {@link
 * io.redlock.redis.RedisLockNode}.
 */
package io.redlock.redis.internal;
