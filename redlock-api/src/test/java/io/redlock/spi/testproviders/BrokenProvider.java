package io.redlock.spi.testproviders;

import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import java.util.Set;

/** Fails in its constructor, as a provider missing a dependency would. */
public final class BrokenProvider implements LockNodeProvider {
  public BrokenProvider() {
    throw new IllegalStateException("BrokenProvider cannot start: its driver is missing");
  }

  @Override
  public Set<String> schemes() {
    return Set.of("test-broken");
  }

  @Override
  public LockNode open(NodeUri uri) {
    throw new AssertionError("never constructed");
  }
}
