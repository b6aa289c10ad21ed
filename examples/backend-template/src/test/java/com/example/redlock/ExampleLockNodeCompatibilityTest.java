package com.example.redlock;

import io.redlock.spi.LockNode;
import io.redlock.spi.NodeUri;
import io.redlock.tck.LockNodeCompatibilityKit;

/** The whole compatibility kit on the example backend: every rule is a test of this class. */
class ExampleLockNodeCompatibilityTest extends LockNodeCompatibilityKit {
  @Override
  protected LockNode createNode() {
    return new ExampleLockNodeProvider().open(NodeUri.parse("example://tck"));
  }
}
