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
 * The standalone relay as users run it: {@code java -jar relay-standalone/target/txbox-relay.jar
 * run --config <file>} in a JVM of its own, with the relay's defaults, on the run's schema and
 * routes. Its process is read from {@code /proc} (resident memory, threads) and {@code jcmd}
 * (heap after a full GC).
 */
final class StandaloneProcess implements AutoCloseable {
    static final Path JAR = Path.of("relay-standalone/target/txbox-relay.jar");

    private final Process process;
    private final int port;
    private final long startedNanos;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private StandaloneProcess(Process process, int port, long startedNanos) {
        this.process = process;
        this.port = port;
        this.startedNanos = startedNanos;
    }

    /**
     * Starts the relay jar with {@code jvmOptions} and {@code routes} (outbox destination to
     * broker target, as {@code txbox.destination.*} takes them) plus {@code extra} keys.
     */
    static StandaloneProcess start(BenchEnv env, List<String> jvmOptions, Map<String, String> routes,
            Map<String, String> extra) throws IOException {
        // from the project's root (bench/run), or from the bench module (its tests)
        Path here = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        Path jar = Files.isRegularFile(here.resolve(JAR)) ? here.resolve(JAR) : here.getParent().resolve(JAR);
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException(jar + " is missing: build it with"
                    + " mvn -B -ntp -pl relay-standalone -am package -DskipTests (bench/run does)");
        }
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
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-jar", jar.toString(), "run", "--config", file.toString()));
        Path log = Files.createTempFile("txbox-bench-relay", ".log");
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        Scenario.log("standalone relay: pid %d, %s, log %s", p.pid(), String.join(" ", jvmOptions), log);
        return new StandaloneProcess(p, port, t0);
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

    private long status(String field) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(process.pid()), "status"))) {
            if (line.startsWith(field + ":")) {
                return Long.parseLong(line.substring(field.length() + 1).trim().split("\\s+")[0]);
            }
        }
        throw new IllegalStateException("no " + field + " in /proc/" + process.pid() + "/status");
    }

    private static final Pattern USED = Pattern.compile("used (\\d+)K");

    /** Heap in use right after a full collection, in MiB ({@code jcmd GC.run}, then {@code GC.heap_info}). */
    double heapAfterGcMb() throws IOException, InterruptedException {
        jcmd("GC.run");
        Matcher m = USED.matcher(jcmd("GC.heap_info"));
        if (!m.find()) {
            throw new IllegalStateException("jcmd GC.heap_info printed no heap use");
        }
        return Long.parseLong(m.group(1)) / 1024.0;
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
