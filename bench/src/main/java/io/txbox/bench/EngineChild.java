package io.txbox.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Debezium's embedded engine with txbox's router, reading the run's outbox and publishing to the
 * run's Kafka broker, in a JVM of its own: txbox-debezium's test {@code EngineProcess} on that
 * module's test class path, where Kafka Connect and kafka-clients are the version Debezium is
 * built against ({@code debezium/target/engine-classpath.txt}, written by its build; on MariaDB the
 * MariaDB connector's own Debezium version, {@code debezium/target/mariadb-engine}). The bench's
 * own JVM keeps the project's Kafka version. The connector's slot and publication (PostgreSQL) are
 * named after it and dropped when it stops. {@link #pause} stops the connector but keeps them and
 * its offsets, and {@link #resume} starts it again in the same JVM, where its code is compiled
 * already: it reads what was written meanwhile.
 */
final class EngineChild implements AutoCloseable {
    private static final String MAIN = "io.txbox.debezium.EngineProcess";

    final String name;
    private final BenchEnv env;
    private final Path offsets;
    private final Process process;
    private final Path log;
    /** The {@code READY} lines seen so far: one per start of the connector. */
    private int starts;

    private EngineChild(BenchEnv env, String name, Path offsets, Process process, Path log) {
        this.env = env;
        this.name = name;
        this.offsets = offsets;
        this.process = process;
        this.log = log;
    }

    /** Starts the engine and returns once its connector streams (a probe row went through). */
    static EngineChild start(BenchEnv env, String name, Path offsets) throws IOException, InterruptedException {
        Path log = Files.createTempFile("txbox-bench-engine-", ".log");
        Process p = new ProcessBuilder(command(env, env.kafkaBootstrap(), name, offsets)).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        Scenario.log("Debezium engine: pid %d, connector %s, log %s", p.pid(), name, log);
        EngineChild child = new EngineChild(env, name, offsets, p, log);
        child.awaitReady();
        return child;
    }

    /** Stops the connector, keeping its slot, publication and offsets; the JVM waits for {@link #resume}. */
    void pause() throws IOException, InterruptedException {
        tell("pause");
        awaitOrClose("PAUSED", starts);
    }

    /**
     * Starts the connector again and returns at once; it reads from where it paused. {@link
     * #awaitReady} returns once its probe row went through, that is after what was written before.
     */
    void resume() throws IOException {
        tell("resume");
    }

    /** Waits until the connector's latest start streams; stops the engine (dropping its slot) if it does not. */
    void awaitReady() throws IOException, InterruptedException {
        awaitOrClose("READY", ++starts);
    }

    private void tell(String line) throws IOException {
        process.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
        process.getOutputStream().flush();
    }

    private void awaitOrClose(String line, int times) throws IOException, InterruptedException {
        try {
            await(line, times, Duration.ofSeconds(180));
        } catch (RuntimeException | InterruptedException e) {
            close();
            throw e;
        }
    }

    private static List<String> command(BenchEnv env, String bootstrapOrDrop, String name, Path offsets) throws IOException {
        // from the project's root (bench/run), or from the bench module (its tests)
        Path here = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        Path module = Files.isDirectory(here.resolve("debezium")) ? here.resolve("debezium") : here.getParent().resolve("debezium");
        return new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xms256m", "-Xmx1g",
                "-cp", classPath(module, env.mariadb), MAIN, env.jdbcUrl, env.user, env.password == null ? "" : env.password,
                env.schema, bootstrapOrDrop, name, offsets.toString()));
    }

    /**
     * The module's test and main classes, then its engine class path: the one Debezium's
     * PostgreSQL connector is built against, or on MariaDB the MariaDB connector's jars
     * ({@code target/mariadb-engine}) with the rest of the class path without Debezium.
     */
    private static String classPath(Path module, boolean mariadb) throws IOException {
        Path target = module.resolve("target");
        Path rest = target.resolve(mariadb ? "mariadb-engine-classpath.txt" : "engine-classpath.txt");
        if (!Files.isRegularFile(rest) || !Files.isDirectory(target.resolve("test-classes"))) {
            throw new IllegalStateException(rest + " or the module's test classes are missing: build them with"
                    + " mvn -B -ntp -pl bench -am package -DskipTests (bench/run does)");
        }
        List<String> entries = new ArrayList<>(List.of(target.resolve("test-classes").toString(), target.resolve("classes").toString()));
        if (mariadb) {
            try (var jars = Files.list(target.resolve("mariadb-engine"))) {
                jars.filter(j -> j.toString().endsWith(".jar")).sorted().forEach(j -> entries.add(j.toString()));
            }
        }
        entries.add(Files.readString(rest).strip());
        return String.join(java.io.File.pathSeparator, entries);
    }

    /** The PostgreSQL process that streams the slot to the engine (its walsender), or none when it is not active. */
    List<Long> walsender() throws java.sql.SQLException {
        if (env.mariadb) {
            return List.of(); // a thread of the server there: the server's CPU is counted whole
        }
        try (java.sql.Connection c = env.adminConnection();
                java.sql.PreparedStatement ps = c.prepareStatement(
                        "SELECT active_pid FROM pg_replication_slots WHERE slot_name = ? AND active")) {
            ps.setString(1, name);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                return rs.next() ? List.of(rs.getLong(1)) : List.of();
            }
        }
    }

    /** Waits until the engine printed {@code line} {@code times} times. */
    private void await(String line, int times, Duration limit) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (System.nanoTime() < deadline) {
            if (Files.readString(log, StandardCharsets.UTF_8).lines().filter(line::equals).count() >= times) {
                return;
            }
            if (!process.isAlive()) {
                throw new IllegalStateException("the Debezium engine exited with status " + process.exitValue()
                        + " before " + line + "; its log " + log + " ends:\n" + tail());
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the Debezium engine did not print " + line + " within " + limit + "; its log "
                + log + " ends:\n" + tail());
    }

    private String tail() throws IOException {
        List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }

    /**
     * Ends the engine's input: it stops, drops its slot and exits. One that does not is killed, and
     * a second process drops the slot, so a run never leaves a slot holding WAL behind.
     */
    @Override
    public void close() throws IOException, InterruptedException {
        process.getOutputStream().close();
        if (process.waitFor(60, TimeUnit.SECONDS) && process.exitValue() == 0) {
            return;
        }
        process.destroyForcibly().waitFor();
        Process drop = new ProcessBuilder(command(env, "drop", name, offsets)).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        if (!drop.waitFor(60, TimeUnit.SECONDS) || drop.exitValue() != 0) {
            drop.destroyForcibly();
            throw new IllegalStateException("replication slot " + name + " may be left behind (see " + log
                    + "): SELECT pg_drop_replication_slot('" + name + "'); DROP PUBLICATION " + name + ";");
        }
    }
}
