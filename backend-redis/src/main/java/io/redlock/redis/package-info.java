/**
 * The Redis backend: {@link io.redlock.redis.RedisLockNode} is one Redis server as a Redlock node,
 * created from a {@code redis://} or {@code rediss://} URI or a builder. Keys are stored exactly as
 * the canonical Redlock algorithm stores them (a string key holding the token, with a millisecond
 * expiry), so other Redlock clients on the same servers exclude this one and the other way round.
 */
package io.redlock.redis;
