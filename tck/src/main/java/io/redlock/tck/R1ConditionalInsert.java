package io.redlock.tck;

import static io.redlock.tck.Harness.*;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** R1 Conditional insert: tryAcquire sets a key only if it is absent. */
interface R1ConditionalInsert {

  /**
   * R1.1: an absent key is acquired, and then holds the caller's token.
   *
   * <p>If this fails, check that tryAcquire writes the key with the given token and reports {@code
   * acquired=true} when it did (Redis: {@code SET key token NX PX ttl} answers {@code OK}; SQL: one
   * row inserted or updated).
   */
  @Test
  @DisplayName("R1.1 an absent key is acquired and then held by the caller's token")
  default void r1_1_absentKeyIsAcquired(Harness h) {
    String key = h.key("r1.1");
    String owner = token();
    assertThat(h.acquire(h.node(), key, owner, LONG_TTL))
        .as("R1.1: tryAcquire of an absent key must answer acquired=true")
        .isTrue();
    h.assertHeldBy(key, owner, "R1.1");
    assertThat(h.release(h.node(), key, owner))
        .as("R1.1: the owner's release of the key it just acquired")
        .isTrue();
  }

  /**
   * R1.2: a key held by one token is not acquired by another, and the holder keeps it.
   *
   * <p>If this fails, check the "unless the key exists and has not expired" condition: the insert
   * must not overwrite a live key (Redis {@code NX}; SQL {@code ON CONFLICT ... WHERE expired}).
   */
  @Test
  @DisplayName("R1.2 a held key is not acquired by another token, and its holder keeps it")
  default void r1_2_heldKeyIsNotAcquiredByAnotherToken(Harness h) {
    String key = h.key("r1.2");
    String owner = token();
    assertThat(h.acquire(h.node(), key, owner, LONG_TTL)).isTrue();
    assertThat(h.acquire(h.node(), key, token(), LONG_TTL))
        .as("R1.2: tryAcquire of a key held by another token must answer acquired=false")
        .isFalse();
    h.assertHeldBy(key, owner, "R1.2");
    assertThat(h.release(h.node(), key, owner))
        .as("R1.2: the holder's release after another token's attempt")
        .isTrue();
  }

  /**
   * R1.3: a held key is not acquired again by its own token: the insert is not re-entrant.
   *
   * <p>If this fails, check that the condition is "key absent or expired", not "key absent or held
   * by this token". Re-entrance belongs to the engine, not the node.
   */
  @Test
  @DisplayName("R1.3 a held key is not acquired again by its own token (not re-entrant)")
  default void r1_3_notReentrant(Harness h) {
    String key = h.key("r1.3");
    String owner = token();
    assertThat(h.acquire(h.node(), key, owner, LONG_TTL)).isTrue();
    assertThat(h.acquire(h.node(), key, owner, LONG_TTL))
        .as("R1.3: a second tryAcquire by the same token must answer acquired=false")
        .isFalse();
    assertThat(h.release(h.node(), key, owner)).isTrue();
  }

  /**
   * R1.4: after release the key is absent and can be acquired by anyone.
   *
   * <p>If this fails, check that release really deletes the key (or marks it expired in a way that
   * tryAcquire treats as absent).
   */
  @Test
  @DisplayName("R1.4 after release the key can be acquired again by another token")
  default void r1_4_reacquireAfterRelease(Harness h) {
    String key = h.key("r1.4");
    String first = token();
    assertThat(h.acquire(h.node(), key, first, LONG_TTL)).isTrue();
    assertThat(h.release(h.node(), key, first)).isTrue();
    String second = token();
    assertThat(h.acquire(h.node(), key, second, LONG_TTL))
        .as("R1.4: tryAcquire after the holder released must answer acquired=true")
        .isTrue();
    h.assertHeldBy(key, second, "R1.4");
  }
}
