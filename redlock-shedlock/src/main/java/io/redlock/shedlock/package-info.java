/** ShedLock on a Redlock quorum: {@link io.redlock.shedlock.RedlockLockProvider}. */
package io.redlock.shedlock;
