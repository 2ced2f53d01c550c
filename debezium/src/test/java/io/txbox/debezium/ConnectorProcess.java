package io.txbox.debezium;

import static org.awaitility.Awaitility.await;

import io.txbox.testkit.TestDatabase;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@link EngineProcess} in a JVM of its own on {@link MariaDbDebezium#classPath()}: Debezium's
 * MariaDB connector with the router, for a MariaDB test database. Its output goes to a log file
 * beside its offsets; its offsets and schema history stay in the directory it is given, so a new
 * process of the same name resumes where the last one committed.
 */
final class ConnectorProcess implements RunningConnector {
    static final Duration START = Duration.ofSeconds(120);

    private final String name;
    private final Process process;
    private final Path log;

    private ConnectorProcess(String name, Process process, Path log) {
        this.name = name;
        this.process = process;
        this.log = log;
    }

    /** Starts the process and returns once its connector streams (it printed {@code READY}). */
    static ConnectorProcess start(TestDatabase db, String name, Path offsets, String bootstrap) {
        Path log = offsets.resolve(name + "-" + System.nanoTime() + ".log");
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xms64m",
                "-Xmx512m", "-cp", MariaDbDebezium.classPath(), EngineProcess.class.getName(), db.jdbcUrl(), db.user(),
                db.password() == null ? "" : db.password(), db.schema(), bootstrap, name, offsets.toString());
        Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ConnectorProcess c = new ConnectorProcess(name, p, log);
        try {
            c.awaitLine("READY", START);
        } catch (RuntimeException e) {
            p.destroyForcibly();
            throw e;
        }
        return c;
    }

    @Override
    public void crashAt(int n) {
        try {
            OutputStream in = process.getOutputStream();
            in.write(("crash " + n + "\n").getBytes(StandardCharsets.UTF_8));
            in.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        awaitLine("crash armed", Duration.ofSeconds(30));
    }

    @Override
    public boolean stopped() {
        return !process.isAlive();
    }

    /** The count the process printed when it stopped; fails while it runs. */
    @Override
    public int published() {
        if (process.isAlive()) {
            throw new IllegalStateException("connector process " + name + " still runs: its count is not final");
        }
        return lines().stream().filter(l -> l.startsWith("published ")).mapToInt(l -> Integer.parseInt(l.substring(10).strip()))
                .reduce((a, b) -> b).orElseThrow(() -> new IllegalStateException("connector process " + name
                        + " printed no count; its log " + log + " ends:\n" + tail()));
    }

    /** Ends the process's input: the engine stops and the process exits; one that does not is killed. */
    @Override
    public void close() {
        try {
            process.getOutputStream().close();
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
                throw new IllegalStateException("connector process " + name + " did not stop; its log " + log + " ends:\n"
                        + tail());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }

    private void awaitLine(String line, Duration limit) {
        await().atMost(limit).pollInterval(Duration.ofMillis(100)).until(() -> {
            if (lines().contains(line)) {
                return true;
            }
            if (!process.isAlive()) {
                throw new IllegalStateException("connector process " + name + " exited with status " + process.exitValue()
                        + " before " + line + "; its log " + log + " ends:\n" + tail());
            }
            return false;
        });
    }

    private List<String> lines() {
        try {
            // Latin-1 reads any byte; the lines looked for are ASCII
            return Files.readAllLines(log, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private String tail() {
        List<String> lines = lines();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }
}
