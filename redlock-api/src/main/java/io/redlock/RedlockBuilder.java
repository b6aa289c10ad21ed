package io.redlock;

import io.redlock.engine.RedlockConfig;
import io.redlock.engine.RedlockEngineProvider;
import io.redlock.spi.LockNode;
import io.redlock.spi.LockNodes;
import io.redlock.spi.NodeUri;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;

/**
 * Builds a {@link Redlock}. Not thread-safe; obtain one from {@link Redlock#builder()}.
 *
 * <p>Nodes are given as objects ({@link #nodes(LockNode...)}), as URIs ({@link #nodes(String...)},
 * any mix of backends found through {@link LockNodes}), or from the environment ({@link
 * #nodesFromEnvironment()}). Nodes given by URI are opened by {@link #build()}, after the engine
 * was found; if opening one fails, those already opened are closed again. The settings ({@link
 * #fencing}, {@link #retry}, ...) are those of {@link RedlockSettings.Builder}.
 */
public final class RedlockBuilder extends RedlockSettings.Builder<RedlockBuilder> {
  /** A node given as an object, or by URI with the providers that resolved its scheme. */
  private record Pending(LockNode node, NodeUri uri, LockNodes providers) {}

  private final List<Pending> nodes = new ArrayList<>();
  private final Set<NodeUri> uris = new HashSet<>();
  private LockNodes discovered;
  private Ticker ticker = Ticker.system();
  private RedlockListener listener = RedlockListener.NONE;

  RedlockBuilder() {}

  /** Adds nodes. The Redlock owns them from now on and closes them when it is closed. */
  public RedlockBuilder nodes(LockNode... nodes) {
    return nodes(java.util.Arrays.asList(Objects.requireNonNull(nodes, "nodes must not be null")));
  }

  /** Adds nodes. The Redlock owns them from now on and closes them when it is closed. */
  public RedlockBuilder nodes(List<? extends LockNode> nodes) {
    Objects.requireNonNull(nodes, "nodes must not be null");
    for (int i = 0; i < nodes.size(); i++) {
      LockNode node = nodes.get(i);
      if (node == null) {
        throw new NullPointerException(
            "node #"
                + (i + 1)
                + " of "
                + nodes.size()
                + " is null; pass a LockNode (e.g. RedisLockNode.fromUri(...)) or leave it out");
      }
      this.nodes.add(new Pending(node, null, null));
    }
    return this;
  }

  /**
   * Adds nodes by URI, e.g. {@code "redis://a:6379"}, {@code "jdbc:postgresql://b/locks"}, {@code
   * "mongodb://c/locks"}; backend options travel in the query. Each URI is parsed and its backend
   * found now, so a typo fails here; the nodes are opened by {@link #build()} and owned by the
   * Redlock.
   *
   * @throws IllegalArgumentException for a malformed URI or one given twice
   * @throws RedlockNonTransientException if no backend, or more than one, claims a URI's scheme;
   *     the message lists the schemes that are available and the module to add
   */
  public RedlockBuilder nodes(String... uris) {
    return nodeUris(java.util.Arrays.asList(Objects.requireNonNull(uris, "uris must not be null")));
  }

  /** Adds nodes by URI; see {@link #nodes(String...)}. */
  public RedlockBuilder nodeUris(Collection<String> uris) {
    Objects.requireNonNull(uris, "uris must not be null");
    List<NodeUri> parsed = LockNodes.parseAll(uris);
    List<Pending> resolved = new ArrayList<>(parsed.size());
    for (NodeUri uri : parsed) {
      if (this.uris.contains(uri)) {
        throw new IllegalArgumentException(
            "node URI '"
                + uri.redacted()
                + "' is listed twice; a quorum needs independent nodes, each listed once");
      }
      discovered().providerFor(uri); // fail now on an unknown or ambiguous scheme
      resolved.add(new Pending(null, uri, discovered()));
    }
    this.uris.addAll(parsed);
    this.nodes.addAll(resolved);
    return this;
  }

  /**
   * Adds the nodes configured outside the code, first found wins: system property {@value
   * ConfiguredNodes#NODES_PROPERTY}, environment variable {@value ConfiguredNodes#NODES_ENV}, or
   * the properties file (entry {@value ConfiguredNodes#NODES_KEY}) named by system property {@value
   * ConfiguredNodes#CONFIG_PROPERTY} or environment variable {@value ConfiguredNodes#CONFIG_ENV}.
   * URIs are separated by commas or whitespace, e.g. {@code
   * REDLOCK_NODES=redis://a:6379,redis://b:6379,jdbc:postgresql://c/locks}. A {@code ${VAR}} in a
   * URI is replaced by that environment variable's value, as the {@code redlock} tool does, so one
   * {@code REDLOCK_NODES} serves both and passwords stay out of it: {@code
   * redis://:${REDIS_PW}@a:6379}.
   *
   * @throws RedlockNonTransientException if nothing is configured, a named file is unusable, or a
   *     referenced variable is not set
   * @throws IllegalArgumentException as {@link #nodes(String...)}
   */
  public RedlockBuilder nodesFromEnvironment() {
    ConfiguredNodes configured =
        ConfiguredNodes.find(System.getenv(), System.getProperties())
            .orElseThrow(
                () ->
                    new RedlockNonTransientException(
                        null,
                        "no Redlock nodes configured: set REDLOCK_NODES (or -Dredlock.nodes) to a"
                            + " list such as redis://a:6379,redis://b:6379,redis://c:6379, or"
                            + " point REDLOCK_CONFIG (or -Dredlock.config) at a properties file"
                            + " with a nodes=... entry",
                        null));
    if (configured.uris().isEmpty()) {
      throw new RedlockNonTransientException(
          null, "the " + configured.source() + " names no node URIs", null);
    }
    try {
      return nodeUris(configured.expand(System.getenv()).uris());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(e.getMessage() + " (in " + configured.source() + ")", e);
    }
  }

  /**
   * Finds backends through this set of providers instead of {@link LockNodes#discover()}, e.g. one
   * loaded from a plugin class loader. Applies to URIs added after this call.
   */
  public RedlockBuilder lockNodes(LockNodes providers) {
    this.discovered = Objects.requireNonNull(providers, "providers must not be null");
    return this;
  }

  private LockNodes discovered() {
    if (discovered == null) {
      discovered = LockNodes.discover();
    }
    return discovered;
  }

  /**
   * Tells {@code listener} what the Redlock does (node calls, acquisitions, extensions, releases,
   * losses), e.g. for metrics; see {@link RedlockListener}. Default {@link RedlockListener#NONE}.
   */
  public RedlockBuilder listener(RedlockListener listener) {
    this.listener = Objects.requireNonNull(listener, "listener must not be null");
    return this;
  }

  /** The monotonic clock for elapsed time (default {@link Ticker#system()}); for tests. */
  public RedlockBuilder ticker(Ticker ticker) {
    this.ticker = Objects.requireNonNull(ticker, "ticker must not be null");
    return this;
  }

  /**
   * Builds the Redlock, opening the nodes given by URI. If that or the engine fails, the nodes this
   * builder opened are closed again (nodes given as objects stay the caller's to close).
   *
   * @throws IllegalStateException if no node was given
   * @throws RedlockNonTransientException if no engine is on the class path, or fencing or restart
   *     quarantine is on and a node lacks the capability it needs (the message names them)
   * @throws RedlockException if a node given by URI cannot be opened
   */
  public Redlock build() {
    if (nodes.isEmpty()) {
      throw new IllegalStateException(
          "a Redlock needs at least one node: call nodes(...) before build()"
              + " (use an odd number, 3 or 5, to survive the loss of 1 or 2)");
    }
    RedlockSettings settings = settings();
    RedlockEngineProvider engine = findEngine(); // before opening connections that could leak
    List<LockNode> all = new ArrayList<>(nodes.size());
    List<LockNode> opened = new ArrayList<>();
    try {
      for (Pending pending : nodes) {
        if (pending.node() != null) {
          all.add(pending.node());
        } else {
          LockNode node = pending.providers().open(pending.uri());
          opened.add(node);
          all.add(node);
        }
      }
      return engine.create(new RedlockConfig(all, settings, ticker, listener));
    } catch (RuntimeException | Error e) {
      LockNodes.closeQuietly(opened, e);
      throw e;
    }
  }

  private static RedlockEngineProvider findEngine() {
    ServiceConfigurationError broken = null;
    for (Iterator<RedlockEngineProvider> it =
            ServiceLoader.load(RedlockEngineProvider.class, RedlockBuilder.class.getClassLoader())
                .iterator();
        ; ) {
      try {
        if (!it.hasNext()) {
          break;
        }
        return it.next();
      } catch (ServiceConfigurationError e) {
        broken = e; // one broken provider must not hide a good one
      }
    }
    throw new RedlockNonTransientException(
        null,
        "no Redlock engine on the class path: add the dependency io.redlock:redlock-engine",
        broken);
  }
}
