package io.redlock.jdbc.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/** Shared pieces of the dialects' status reports. */
final class StatusText {
  private static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");
  private static final Path UPTIME = Path.of("/proc/uptime");

  private StatusText() {}

  /**
   * The Linux boot id of this machine: for an embedded database (SQLite), the machine's restart is
   * the store's restart, since unsynced writes live in its page cache until then.
   */
  static Optional<String> bootId() {
    try {
      return Optional.of(Files.readString(BOOT_ID, StandardCharsets.US_ASCII).strip())
          .filter(s -> !s.isEmpty());
    } catch (IOException | SecurityException notLinux) {
      return Optional.empty();
    }
  }

  /** How long this machine has been up, from {@code /proc/uptime} (Linux only). */
  static Optional<Duration> machineUptime() {
    try {
      String first = Files.readString(UPTIME, StandardCharsets.US_ASCII).strip().split("\\s+")[0];
      return Optional.of(Duration.ofMillis((long) (Double.parseDouble(first) * 1000)));
    } catch (IOException | RuntimeException notLinux) {
      return Optional.empty();
    }
  }
}
