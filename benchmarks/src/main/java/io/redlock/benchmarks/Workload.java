package io.redlock.benchmarks;

import java.time.Duration;

/** The settings every subject of a run shares, so that they do the same work. */
final class Workload {
  /** Lock time to live (lease time for Redisson); long enough never to expire mid-cycle. */
  static final Duration TTL = Duration.ofSeconds(10);

  /** The longest a contended acquire waits before it counts as starved. */
  static final Duration CONTENDED_MAX_WAIT = Duration.ofSeconds(2);

  private Workload() {}
}
