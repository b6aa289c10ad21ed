package io.redlock.spi.testproviders;

import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import java.util.Set;

/** Declares a scheme in the wrong form ({@code Test-Bad://}): it must be set aside, not guessed. */
public final class BadSchemeProvider implements LockNodeProvider {
  @Override
  public Set<String> schemes() {
    return Set.of("Test-Bad://");
  }

  @Override
  public LockNode open(NodeUri uri) {
    return new MapLockNode(uri.redacted());
  }
}
