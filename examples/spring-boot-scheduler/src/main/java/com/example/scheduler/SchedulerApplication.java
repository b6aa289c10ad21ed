package com.example.scheduler;

import java.time.LocalTime;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.atomic.AtomicInteger;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * An application with a scheduled job that must run on one instance at a time. Everything Redlock
 * comes from the starter and {@code redlock.nodes}; ShedLock's {@code @SchedulerLock} uses the
 * auto-configured {@code RedlockLockProvider}. Run it yourself against your nodes with
 * {@code REDLOCK_NODES=redis://a:6379,...} (Spring's relaxed binding of {@code redlock.nodes}).
 */
@SpringBootApplication
@EnableScheduling
@EnableSchedulerLock(defaultLockAtMostFor = "30s")
public class SchedulerApplication {

  public static void main(String[] args) {
    SpringApplication.run(SchedulerApplication.class, args);
  }

  /** The job: every 2 seconds, on whichever instance the quorum grants the lock. */
  @Component
  static class ReportJob {
    static final AtomicInteger RUNS = new AtomicInteger();
    private final String instance;

    ReportJob(@Value("${instance.name:${HOSTNAME:local}}") String instance) {
      this.instance = instance;
    }

    @Scheduled(cron = "*/2 * * * * *")
    @SchedulerLock(name = "report", lockAtLeastFor = "1s")
    public void report() {
      System.out.printf(
          "%s  %s ran the report job (run #%d)%n",
          LocalTime.now().truncatedTo(ChronoUnit.MILLIS), instance, RUNS.incrementAndGet());
    }
  }
}
