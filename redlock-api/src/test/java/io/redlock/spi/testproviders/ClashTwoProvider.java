package io.redlock.spi.testproviders;

import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import java.util.Set;

/** Claims {@code test-clash}, as does {@link ClashOneProvider}. */
public final class ClashTwoProvider implements LockNodeProvider {
  @Override
  public Set<String> schemes() {
    return Set.of("test-clash");
  }

  @Override
  public LockNode open(NodeUri uri) {
    return new MapLockNode("two:" + uri.redacted());
  }
}
