package com.example.scheduler;

import io.redlock.testservers.PostgresServer;
import io.redlock.testservers.RedisServers;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The demo: starts 3 Redis and 2 PostgreSQL servers on free local ports, then two instances of
 * {@link SchedulerApplication} on that quorum, and lets them run for 20 seconds (or the number of
 * seconds given as the first argument). Each run of the job prints which instance ran it.
 */
public final class Demo {
  private Demo() {}

  public static void main(String[] args) throws Exception {
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 20;
    System.out.println("starting 3 Redis + 2 PostgreSQL servers ...");
    try (RedisServers redis = RedisServers.start(3);
        PostgresServer pg1 = PostgresServer.startLocal();
        PostgresServer pg2 = PostgresServer.startLocal()) {
      List<String> nodes = new ArrayList<>(redis.uris());
      nodes.add(pg1.jdbcUrl() + "&redlock.createTable=true");
      nodes.add(pg2.jdbcUrl() + "&redlock.createTable=true");
      try (ConfigurableApplicationContext a = instance("instance-A", nodes);
          ConfigurableApplicationContext b = instance("instance-B", nodes)) {
        for (ConfigurableApplicationContext ctx : List.of(a, b)) {
          HealthIndicator health = ctx.getBean("redlockHealthIndicator", HealthIndicator.class);
          var h = health.health();
          System.out.println(
              ctx.getEnvironment().getProperty("instance.name")
                  + " started; Redlock health "
                  + h.getStatus()
                  + ", nodes up: "
                  + h.getDetails().get("nodesUp")
                  + " of "
                  + ctx.getBean(io.redlock.Redlock.class).nodes().size());
        }
        System.out.println("two instances run the job every 2 s for " + seconds + " s:");
        Thread.sleep(seconds * 1000L);
      }
    }
    System.out.println(
        "done: the job ran " + SchedulerApplication.ReportJob.RUNS.get() + " times in all");
  }

  private static ConfigurableApplicationContext instance(String name, List<String> nodes) {
    return new SpringApplicationBuilder(SchedulerApplication.class)
        .web(WebApplicationType.NONE)
        .properties(
            "instance.name=" + name,
            "spring.application.name=" + name,
            "redlock.nodes=" + String.join(",", nodes))
        .run();
  }
}
