package io.redlock.chaos;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What a {@link ChaosClient} does, as command-line arguments {@code --name=value}: built by a test
 * with the fluent setters and {@link #toArgs()}, read back by the client with {@link #parse}.
 * Durations are in milliseconds.
 */
public final class ClientOptions {
  /** Node URIs, in quorum order. */
  List<String> nodes = new ArrayList<>();

  /** Redis URI of the counter store for the read-modify-write (C2); none: no counter. */
  String counter = "";

  /** Worker threads. */
  int threads = 4;

  /** The resource: shared by all threads, or with {@link #distinct} one per thread. */
  String resource = "chaos";

  /** One resource per thread ({@code resource-jvm-tN}) instead of one shared resource. */
  boolean distinct;

  long ttlMillis = 3_000;

  /** 0: {@code tryAcquire}; otherwise {@code acquire} with this maximum wait. */
  long maxWaitMillis = 2_000;

  /** The pause between reading and writing the counter (inside the hold). */
  long workMillis = 1;

  /** Pause after each release. */
  long thinkMillis = 0;

  /** Acquisitions per thread at most. */
  int maxOps = 10_000;

  boolean fencing;

  /** Write the counter with {@code RedisFencedWrites} and the lease's fencing token. */
  boolean fencedWrites;

  /** Restart quarantine's maximum TTL; 0: off. */
  long quarantineMillis;

  long nodeTimeoutMillis = 300;
  int retryAttempts = 3;
  long retryMinMillis = 5;
  long retryMaxMillis = 50;

  /** Write a health sample this often; 0: never. */
  long healthEveryMillis;

  /** After this long from the go, the next lease granted is held for {@link #longHoldMillis}. */
  long longHoldAfterMillis = -1;

  long longHoldMillis = 60_000;

  /** The client halts this long after its deadline if it has not ended by itself. */
  long graceMillis = 30_000;

  /** A client with default options and no nodes. */
  public ClientOptions() {}

  /** Adds node URIs. */
  public ClientOptions nodes(List<String> uris) {
    nodes.addAll(uris);
    return this;
  }

  /** The counter store's Redis URI. */
  public ClientOptions counter(String uri) {
    this.counter = Objects.requireNonNull(uri);
    return this;
  }

  public ClientOptions threads(int n) {
    this.threads = n;
    return this;
  }

  /** One shared resource. */
  public ClientOptions resource(String name) {
    this.resource = name;
    this.distinct = false;
    return this;
  }

  /** One resource per thread, named after {@code prefix}. */
  public ClientOptions distinctResources(String prefix) {
    this.resource = prefix;
    this.distinct = true;
    return this;
  }

  public ClientOptions ttl(long millis) {
    this.ttlMillis = millis;
    return this;
  }

  public ClientOptions maxWait(long millis) {
    this.maxWaitMillis = millis;
    return this;
  }

  public ClientOptions work(long millis) {
    this.workMillis = millis;
    return this;
  }

  public ClientOptions think(long millis) {
    this.thinkMillis = millis;
    return this;
  }

  public ClientOptions maxOps(int n) {
    this.maxOps = n;
    return this;
  }

  public ClientOptions fencing(boolean on) {
    this.fencing = on;
    return this;
  }

  public ClientOptions fencedWrites(boolean on) {
    this.fencedWrites = on;
    return this;
  }

  public ClientOptions quarantine(long maxTtlMillis) {
    this.quarantineMillis = maxTtlMillis;
    return this;
  }

  public ClientOptions nodeTimeout(long millis) {
    this.nodeTimeoutMillis = millis;
    return this;
  }

  public ClientOptions retry(int attempts, long minMillis, long maxMillis) {
    this.retryAttempts = attempts;
    this.retryMinMillis = minMillis;
    this.retryMaxMillis = maxMillis;
    return this;
  }

  public ClientOptions healthEvery(long millis) {
    this.healthEveryMillis = millis;
    return this;
  }

  public ClientOptions longHold(long afterMillis, long holdMillis) {
    this.longHoldAfterMillis = afterMillis;
    this.longHoldMillis = holdMillis;
    return this;
  }

  /** A copy, to vary one client's options. */
  public ClientOptions copy() {
    return parse(toArgs().toArray(String[]::new));
  }

  /** The options as arguments. */
  public List<String> toArgs() {
    List<String> a = new ArrayList<>();
    for (String node : nodes) {
      a.add("--node=" + node);
    }
    a.add("--counter=" + counter);
    a.add("--threads=" + threads);
    a.add("--resource=" + resource);
    a.add("--distinct=" + distinct);
    a.add("--ttl=" + ttlMillis);
    a.add("--maxWait=" + maxWaitMillis);
    a.add("--work=" + workMillis);
    a.add("--think=" + thinkMillis);
    a.add("--maxOps=" + maxOps);
    a.add("--fencing=" + fencing);
    a.add("--fencedWrites=" + fencedWrites);
    a.add("--quarantine=" + quarantineMillis);
    a.add("--nodeTimeout=" + nodeTimeoutMillis);
    a.add("--retry=" + retryAttempts + "," + retryMinMillis + "," + retryMaxMillis);
    a.add("--healthEvery=" + healthEveryMillis);
    a.add("--longHold=" + longHoldAfterMillis + "," + longHoldMillis);
    a.add("--grace=" + graceMillis);
    return a;
  }

  /**
   * Reads arguments made by {@link #toArgs()}; {@code --jvm}, {@code --out} and {@code --go} are
   * the client's own and skipped here.
   *
   * @throws IllegalArgumentException for an unknown argument
   */
  public static ClientOptions parse(String[] args) {
    ClientOptions o = new ClientOptions();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      if (!arg.startsWith("--") || eq < 0) {
        throw new IllegalArgumentException("expected --name=value, got " + arg);
      }
      String name = arg.substring(2, eq);
      String v = arg.substring(eq + 1);
      switch (name) {
        case "jvm", "out", "go" -> {}
        case "node" -> o.nodes.add(v);
        case "counter" -> o.counter = v;
        case "threads" -> o.threads = Integer.parseInt(v);
        case "resource" -> o.resource = v;
        case "distinct" -> o.distinct = Boolean.parseBoolean(v);
        case "ttl" -> o.ttlMillis = Long.parseLong(v);
        case "maxWait" -> o.maxWaitMillis = Long.parseLong(v);
        case "work" -> o.workMillis = Long.parseLong(v);
        case "think" -> o.thinkMillis = Long.parseLong(v);
        case "maxOps" -> o.maxOps = Integer.parseInt(v);
        case "fencing" -> o.fencing = Boolean.parseBoolean(v);
        case "fencedWrites" -> o.fencedWrites = Boolean.parseBoolean(v);
        case "quarantine" -> o.quarantineMillis = Long.parseLong(v);
        case "nodeTimeout" -> o.nodeTimeoutMillis = Long.parseLong(v);
        case "retry" -> {
          String[] p = v.split(",");
          o.retryAttempts = Integer.parseInt(p[0]);
          o.retryMinMillis = Long.parseLong(p[1]);
          o.retryMaxMillis = Long.parseLong(p[2]);
        }
        case "healthEvery" -> o.healthEveryMillis = Long.parseLong(v);
        case "longHold" -> {
          String[] p = v.split(",");
          o.longHoldAfterMillis = Long.parseLong(p[0]);
          o.longHoldMillis = Long.parseLong(p[1]);
        }
        case "grace" -> o.graceMillis = Long.parseLong(v);
        default -> throw new IllegalArgumentException("unknown option --" + name);
      }
    }
    return o;
  }

  /** The value of {@code --name} in {@code args}, if present. */
  static String value(String[] args, String name) {
    for (String arg : args) {
      if (arg.startsWith("--" + name + "=")) {
        return arg.substring(name.length() + 3);
      }
    }
    return null;
  }
}
