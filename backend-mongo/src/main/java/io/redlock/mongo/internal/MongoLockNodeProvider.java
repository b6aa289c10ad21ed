package io.redlock.mongo.internal;

import io.redlock.mongo.MongoLockNode;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodeProvider;
import io.redlock.spi.NodeUri;
import java.util.Set;

/**
 * Opens {@link MongoLockNode}s for {@code mongodb://} and {@code mongodb+srv://} URIs; registered
 * in {@code META-INF/services/io.redlock.spi.LockNodeProvider}.
 */
public final class MongoLockNodeProvider implements LockNodeProvider {
  /** For {@link java.util.ServiceLoader}. */
  public MongoLockNodeProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("mongodb", "mongodb+srv");
  }

  @Override
  public LockNode open(NodeUri uri) {
    return MongoLockNode.fromUri(uri.raw());
  }
}
