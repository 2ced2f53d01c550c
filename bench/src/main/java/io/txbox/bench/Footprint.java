package io.txbox.bench;

import io.txbox.outbox.Outbox;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * relay-footprint: what the standalone relay process costs, launched as the README says ({@code
 * txbox-relay run}, the launcher with its JVM defaults and class-data archive): time and CPU from
 * the launch to {@code /health/ready}, then resident memory, threads and heap after a full GC,
 * idle and while it drains a backlog to Kafka at full rate (sampled every 100 ms), and the CPU
 * it spends per message. {@code --launch jar} runs {@code java -jar} with the JVM's defaults
 * instead, for a before and after in one sitting; {@code --jvm-opts} tries other JVM settings.
 */
final class Footprint extends Scenario {
    private long rows;
    private int idleSeconds;
    private List<String> jvmOptions;
    private StandaloneProcess.Launch launch;
    private long lost = -1;

    @Override
    void configure(Options o) {
        rows = o.longValue("rows", 200_000, "rows drained while the process is sampled");
        idleSeconds = o.intValue("idle-seconds", 5, "seconds the ready relay idles before the idle sample");
        String how = o.string("launch", "launcher", "launcher (relay-standalone/target/txbox-relay, as the README"
                + " runs it) or jar (java -jar relay-standalone/target/txbox-relay.jar, the JVM's defaults)");
        if (!how.equals("launcher") && !how.equals("jar")) {
            throw new Options.UsageException("--launch must be launcher or jar, but was '" + how + "'");
        }
        launch = how.equals("jar") ? StandaloneProcess.Launch.JAR : StandaloneProcess.Launch.LAUNCHER;
        String opts = o.string("jvm-opts", "", "JVM options of the relay process, space-separated (default: none:"
                + " the launcher's, or the JVM's with --launch jar)");
        jvmOptions = opts.isBlank() ? List.of() : Arrays.asList(opts.trim().split("\\s+"));
    }

    @Override
    boolean failedCorrectness() {
        return lost != 0;
    }

    @Override
    void run() throws Exception {
        double prepareMs = launch == StandaloneProcess.Launch.LAUNCHER ? StandaloneProcess.prepareLauncher() : 0;
        try (Destination dest = Destination.create(Broker.KAFKA, env, "footprint", Map.of());
                StandaloneProcess relay = StandaloneProcess.start(env, launch, jvmOptions,
                        Map.of(dest.name, "kafka:" + dest.name), Map.of())) {
            double readyMs = relay.awaitReady(Duration.ofSeconds(60));
            double readyCpuMs = relay.cpuMs();
            log("ready after %.0f ms (%.0f ms of CPU)", readyMs, readyCpuMs);
            long idleUntil = System.nanoTime() + idleSeconds * 1_000_000_000L;
            while (System.nanoTime() < idleUntil) {
                Thread.sleep(100);
            }
            double idleRss = relay.rssMb();
            int idleThreads = relay.threads();
            double idleHeap = relay.heapAfterGcMb();
            log("idle: RSS %.0f MiB, %d threads, heap after GC %.1f MiB", idleRss, idleThreads, idleHeap);

            double[] peak = {0, 0};
            Thread sampler = new Thread(() -> {
                try {
                    while (!Thread.currentThread().isInterrupted()) {
                        peak[0] = Math.max(peak[0], relay.rssMb());
                        peak[1] = Math.max(peak[1], relay.threads());
                        Thread.sleep(100);
                    }
                } catch (InterruptedException | java.io.IOException e) {
                    Thread.currentThread().interrupt();
                }
            }, "footprint-sampler");
            sampler.setDaemon(true);
            sampler.start();
            Outbox outbox = Outbox.builder().tables(env.tables).build();
            double cpu0 = relay.cpuMs();
            long t0 = System.nanoTime();
            double fillRate = Backlog.fill(env.pool("writers", 2), outbox, dest.name, 0, rows, 2, 1000, payload(400), 0, null);
            long drainDeadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
            while (RelayRun.outboxRows(env) > 0 && System.nanoTime() < drainDeadline) {
                Thread.sleep(50);
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            double drainCpuMs = relay.cpuMs() - cpu0;
            sampler.interrupt();
            sampler.join();
            double drainHeap = relay.heapAfterGcMb();
            KafkaAdmin.ReadBack back = dest.readBack(rows, Duration.ofSeconds(15));
            lost = back.lost() + RelayRun.outboxRows(env);
            log("draining: peak RSS %.0f MiB, peak %d threads, heap after GC %.1f MiB; %,d rows in %.1f s, %.0f ms of"
                    + " CPU, lost %d", peak[0], (int) peak[1], drainHeap, rows, secs, drainCpuMs, lost);
            report.figure("ready_ms", Report.round(readyMs, 0), "ms")
                    .figure("ready_cpu_ms", Report.round(readyCpuMs, 0), "ms")
                    .figure("launcher_prepare_ms", Report.round(prepareMs, 0), "ms")
                    .figure("idle_rss_mb", Report.round(idleRss, 0), "MiB")
                    .figure("idle_threads", idleThreads, "")
                    .figure("idle_heap_after_gc_mb", Report.round(idleHeap, 1), "MiB")
                    .figure("drain_rss_max_mb", Report.round(peak[0], 0), "MiB")
                    .figure("drain_threads_max", (long) peak[1], "")
                    .figure("drain_heap_after_gc_mb", Report.round(drainHeap, 1), "MiB")
                    .figure("drain_msgs_per_sec", Report.round(rows / secs, 0), "msg/s")
                    .figure("drain_cpu_ms_per_1k_msgs", Report.round(drainCpuMs * 1000 / rows, 1), "ms")
                    .figure("write_rows_per_sec", Report.round(fillRate, 0), "rows/s")
                    .figure("lost", lost, "msgs")
                    .figure("duplicates_read_back", back.duplicates(), "msgs");
            report.target("drain_rss_max_mb", "<=", 256);
            report.target("ready_ms", "<=", 1500);
            report.target("lost", "==", 0);
            report.note((launch == StandaloneProcess.Launch.LAUNCHER ? StandaloneProcess.LAUNCHER + " run, JVM options: "
                    + (jvmOptions.isEmpty() ? "the launcher's defaults" : String.join(" ", jvmOptions))
                    + "; launcher_prepare_ms is its --version run before, which writes the class-data archive if it"
                    + " is missing (as an image build does)"
                    : "java -jar " + StandaloneProcess.JAR + " run, JVM options: "
                    + (jvmOptions.isEmpty() ? "none (the JVM's defaults)" : String.join(" ", jvmOptions)))
                    + "; the backlog is written while the relay runs, so it drains as fast as it is written;"
                    + " drain_cpu_ms_per_1k_msgs is the relay process's CPU time over the drain");
            html.paragraph(String.format("Standalone relay: ready in %.0f ms; idle RSS %.0f MiB, %d threads, heap after"
                            + " GC %.1f MiB; draining %,d rows: peak RSS %.0f MiB, %d threads, heap after GC %.1f MiB.",
                    readyMs, idleRss, idleThreads, idleHeap, rows, peak[0], (int) peak[1], drainHeap));
        }
    }
}
