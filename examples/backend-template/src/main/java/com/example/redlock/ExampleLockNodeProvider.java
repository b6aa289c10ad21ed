package com.example.redlock;

import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import java.util.Set;

/**
 * Opens {@code example://STORE} nodes; found by {@link java.util.ServiceLoader} through {@code
 * META-INF/services/io.redlock.spi.LockNodeProvider}.
 */
public final class ExampleLockNodeProvider implements LockNodeProvider {
  /** For ServiceLoader. */
  public ExampleLockNodeProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("example");
  }

  @Override
  public LockNode open(NodeUri uri) {
    String raw = uri.raw();
    String store = raw.regionMatches(true, 0, "example://", 0, 10) ? raw.substring(10) : "";
    if (!store.matches("[A-Za-z0-9._-]+")) {
      throw new IllegalArgumentException(
          "expected example://STORE (letters, digits, '.', '_', '-'; no options), got "
              + uri.redacted());
    }
    return new ExampleLockNode(store);
  }
}
