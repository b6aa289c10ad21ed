package io.redlock.spi.testproviders;

import io.redlock.RedlockNonTransientException;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Opens {@link MapLockNode}s for {@code test-mem://NAME}. A URI whose query has {@code fail=true}
 * fails to open, as an unreachable node would; one with {@code explode=true} throws an unexpected
 * exception carrying the raw URI (password included), as a careless backend might.
 */
public final class MemoryProvider implements LockNodeProvider {
  /** Every node opened through any instance, in order; tests filter by name. */
  public static final List<MapLockNode> OPENED = new CopyOnWriteArrayList<>();

  @Override
  public Set<String> schemes() {
    return Set.of("test-mem");
  }

  @Override
  public LockNode open(NodeUri uri) {
    if ("true".equals(uri.query().get("fail"))) {
      throw new RedlockNonTransientException(uri.redacted(), "refused to open (fail=true)", null);
    }
    if ("true".equals(uri.query().get("explode"))) {
      throw new IllegalStateException("driver blew up connecting to " + uri.raw());
    }
    MapLockNode node = new MapLockNode(uri.redacted());
    OPENED.add(node);
    return node;
  }
}
