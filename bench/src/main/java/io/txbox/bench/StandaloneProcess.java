package io.txbox.bench;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The standalone relay as users run it: {@code relay-standalone/target/txbox-relay run --config
 * <file>}, the launcher the README gives (its JVM settings and class-data archive), or {@code java
 * -jar relay-standalone/target/txbox-relay.jar run --config <file>} with the JVM's own defaults;
 * in a JVM of its own, with the relay's defaults, on the run's schema and routes. Its process is
 * read from {@code /proc} (resident memory, threads, CPU time) and {@code jcmd} (heap after a full
 * GC).
 */
final class StandaloneProcess implements AutoCloseable {
    static final Path JAR = Path.of("relay-standalone/target/txbox-relay.jar");
    static final Path LAUNCHER = Path.of("relay-standalone/target/txbox-relay");
    /** {@code /proc/<pid>/stat} counts CPU time in these ticks per second ({@code getconf CLK_TCK}). */
    private static final int CLOCK_TICKS = 100;

    /** How the relay is launched. */
    enum Launch {
        /** {@code txbox-relay}, the launcher: its JVM defaults, or the given options as {@code TXBOX_JAVA_OPTS}. */
        LAUNCHER,
        /** {@code java -jar txbox-relay.jar}: the JVM's defaults, or the given options. */
        JAR
    }

    private final Process process;
    private final int port;
    private final long startedNanos;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private StandaloneProcess(Process process, int port, long startedNanos) {
        this.process = process;
        this.port = port;
        this.startedNanos = startedNanos;
    }

    /** {@link #start(BenchEnv, Launch, List, Map, Map)} through the launcher, as the README runs it. */
    static StandaloneProcess start(BenchEnv env, List<String> jvmOptions, Map<String, String> routes,
            Map<String, String> extra) throws IOException {
        return start(env, Launch.LAUNCHER, jvmOptions, routes, extra);
    }

    /**
     * Starts the relay with {@code jvmOptions} (none: the launcher's or the JVM's defaults) and
     * {@code routes} (outbox destination to broker target, as {@code txbox.destination.*} takes
     * them) plus {@code extra} keys.
     */
    static StandaloneProcess start(BenchEnv env, Launch launch, List<String> jvmOptions, Map<String, String> routes,
            Map<String, String> extra) throws IOException {
        Path jar = built(JAR);
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        StringBuilder cfg = new StringBuilder();
        cfg.append("txbox.jdbc.url=").append(env.jdbcUrl).append('\n')
                .append("txbox.jdbc.user=").append(env.user).append('\n')
                .append("txbox.schema=").append(env.schema).append('\n')
                .append("txbox.kafka.bootstrap-servers=").append(env.kafkaBootstrap()).append('\n')
                .append("txbox.http.host=127.0.0.1\n")
                .append("txbox.http.port=").append(port).append('\n');
        if (env.password != null && !env.password.isEmpty()) {
            cfg.append("txbox.jdbc.password=").append(env.password).append('\n');
        }
        routes.forEach((dest, target) -> cfg.append("txbox.destination.").append(dest).append('=').append(target).append('\n'));
        extra.forEach((k, v) -> cfg.append(k).append('=').append(v).append('\n'));
        Path file = Files.createTempFile("txbox-bench-relay", ".properties");
        file.toFile().deleteOnExit();
        Files.writeString(file, cfg);
        List<String> cmd = new ArrayList<>();
        ProcessBuilder pb = new ProcessBuilder(cmd);
        if (launch == Launch.LAUNCHER) {
            cmd.add(launcher(pb).toString());
            if (!jvmOptions.isEmpty()) {
                pb.environment().put("TXBOX_JAVA_OPTS", String.join(" ", jvmOptions));
            }
        } else {
            cmd.add(java());
            cmd.addAll(jvmOptions);
            cmd.addAll(List.of("-jar", jar.toString()));
        }
        cmd.addAll(List.of("run", "--config", file.toString()));
        Path log = Files.createTempFile("txbox-bench-relay", ".log");
        long t0 = System.nanoTime();
        Process p = pb.redirectErrorStream(true).redirectOutput(log.toFile()).start();
        Scenario.log("standalone relay: pid %d, %s %s, log %s", p.pid(), launch, String.join(" ", jvmOptions), log);
        return new StandaloneProcess(p, port, t0);
    }

    /**
     * Runs {@code txbox-relay --version} once, as an image build does, so that the launcher has
     * written its class-data archive before the measured start; the time it took, in ms (short
     * when the archive is already there).
     */
    static double prepareLauncher() throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder();
        pb.command(launcher(pb).toString(), "--version").redirectErrorStream(true);
        long t0 = System.nanoTime();
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IllegalStateException("txbox-relay --version failed: " + out);
        }
        return (System.nanoTime() - t0) / 1e6;
    }

    /** The launcher, set to run this JVM's java. */
    private static Path launcher(ProcessBuilder pb) {
        built(JAR);
        pb.environment().put("JAVA", java());
        return built(LAUNCHER);
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** {@code file} of the relay-standalone build, from the project's root (bench/run) or from the bench module (its tests). */
    private static Path built(Path file) {
        Path here = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        Path found = Files.isRegularFile(here.resolve(file)) ? here.resolve(file) : here.getParent().resolve(file);
        if (!Files.isRegularFile(found)) {
            throw new IllegalStateException(found + " is missing: build it with"
                    + " mvn -B -ntp -pl relay-standalone -am package -DskipTests (bench/run does)");
        }
        return found;
    }

    /** Waits until {@code /health/ready} answers 200; the time from the JVM's start, in ms. */
    double awaitReady(Duration limit) throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        HttpRequest ready = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health/ready"))
                .timeout(Duration.ofSeconds(2)).build();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("the standalone relay exited with status " + process.exitValue());
            }
            try {
                if (http.send(ready, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return (System.nanoTime() - startedNanos) / 1e6;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(5);
        }
        throw new IllegalStateException("the standalone relay was not ready within " + limit);
    }

    long pid() {
        return process.pid();
    }

    /** Resident memory in MiB, from {@code /proc/<pid>/status}. */
    double rssMb() throws IOException {
        return status("VmRSS") / 1024.0;
    }

    int threads() throws IOException {
        return (int) status("Threads");
    }

    /** CPU time the process has used so far (user and system), in ms, from {@code /proc/<pid>/stat}. */
    double cpuMs() throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(process.pid()), "stat"));
        // after the command name in parentheses: state is field 3, utime 14, stime 15
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 1000.0 / CLOCK_TICKS;
    }

    private long status(String field) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(process.pid()), "status"))) {
            if (line.startsWith(field + ":")) {
                return Long.parseLong(line.substring(field.length() + 1).trim().split("\\s+")[0]);
            }
        }
        throw new IllegalStateException("no " + field + " in /proc/" + process.pid() + "/status");
    }

    private static final Pattern USED = Pattern.compile("used (\\d+)K");

    /**
     * Heap in use right after a full collection, in MiB ({@code jcmd GC.run}, then {@code
     * GC.heap_info}): the one heap line of G1, or the generations of the serial and parallel
     * collectors added up; not the metaspace.
     */
    double heapAfterGcMb() throws IOException, InterruptedException {
        jcmd("GC.run");
        long usedK = 0;
        boolean found = false;
        for (String line : jcmd("GC.heap_info").split("\n")) {
            Matcher m = USED.matcher(line);
            if (!line.contains("Metaspace") && !line.contains("class space") && m.find()) {
                usedK += Long.parseLong(m.group(1));
                found = true;
            }
        }
        if (!found) {
            throw new IllegalStateException("jcmd GC.heap_info printed no heap use");
        }
        return usedK / 1024.0;
    }

    private String jcmd(String command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                Long.toString(process.pid()), command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("jcmd " + command + " failed: " + out);
        }
        return out;
    }

    /** SIGTERM, as an orchestrator stops it; then a kill if it has not stopped within 30 s. */
    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
        }
    }
}
