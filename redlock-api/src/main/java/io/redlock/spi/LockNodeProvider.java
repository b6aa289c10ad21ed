package io.redlock.spi;

import java.util.Set;

/**
 * Opens {@link LockNode}s for URI schemes; found through {@link java.util.ServiceLoader}. A backend
 * module registers its provider in {@code META-INF/services/io.redlock.spi.LockNodeProvider}, and
 * users then name nodes by URI, e.g. {@code redis://host:6379} or {@code
 * jdbc:postgresql://host/db}.
 */
public interface LockNodeProvider {

  /**
   * The schemes this provider opens, lower case, as {@link NodeUri#scheme()} reports them: {@code
   * "redis"}, {@code "rediss"}, {@code "jdbc:postgresql"}, {@code "mongodb"}...
   */
  Set<String> schemes();

  /**
   * Opens a node. Options travel in the URI's query; an unknown option is an error that names it
   * and lists the known ones.
   *
   * @throws IllegalArgumentException for a malformed URI or option, naming the problem
   * @throws io.redlock.RedlockException if the node cannot be set up
   */
  LockNode open(NodeUri uri);
}
