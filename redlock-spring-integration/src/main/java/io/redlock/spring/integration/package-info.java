/**
 * Spring Integration locks on a Redlock quorum: {@link
 * io.redlock.spring.integration.RedlockLockRegistry} and its {@link
 * io.redlock.spring.integration.RedlockRegistryLock}.
 */
package io.redlock.spring.integration;
