/**
 * Spring Boot auto-configuration of a Redlock from {@code redlock.*} properties ({@link
 * io.redlock.spring.boot.RedlockProperties}), with metrics, a health indicator, and ShedLock /
 * Spring Integration beans.
 */
package io.redlock.spring.boot;
