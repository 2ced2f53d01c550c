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
 * module's test class path ({@code debezium/target/engine-classpath.txt}, written by its build),
 * where Kafka Connect and kafka-clients are the version Debezium 3.6 is built against. The bench's
 * own JVM keeps the project's Kafka version. The connector's slot and publication are named after
 * it and dropped when it stops.
 */
final class EngineChild implements AutoCloseable {
    private static final String MAIN = "io.txbox.debezium.EngineProcess";

    final String name;
    private final BenchEnv env;
    private final Process process;
    private final Path log;

    private EngineChild(BenchEnv env, String name, Process process, Path log) {
        this.env = env;
        this.name = name;
        this.process = process;
        this.log = log;
    }

    /** Starts the engine and returns once its connector streams (a probe row went through). */
    static EngineChild start(BenchEnv env, String name) throws IOException, InterruptedException {
        if (env.mariadb) {
            throw new Options.UsageException("cdc-kafka runs on PostgreSQL only: Debezium 3.6's MySQL connector"
                    + " refuses MariaDB 10.5 and later (see docs/DEBEZIUM.md)");
        }
        Path log = Files.createTempFile("txbox-bench-engine-", ".log");
        Process p = new ProcessBuilder(command(env, env.kafkaBootstrap(), name)).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        Scenario.log("Debezium engine: pid %d, slot %s, log %s", p.pid(), name, log);
        EngineChild child = new EngineChild(env, name, p, log);
        try {
            child.await("READY", Duration.ofSeconds(120));
        } catch (RuntimeException | InterruptedException e) {
            child.close();
            throw e;
        }
        return child;
    }

    private static List<String> command(BenchEnv env, String bootstrapOrDrop, String name) throws IOException {
        // from the project's root (bench/run), or from the bench module (its tests)
        Path here = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        Path module = Files.isDirectory(here.resolve("debezium")) ? here.resolve("debezium") : here.getParent().resolve("debezium");
        Path cpFile = module.resolve("target/engine-classpath.txt");
        if (!Files.isRegularFile(cpFile) || !Files.isDirectory(module.resolve("target/test-classes"))) {
            throw new IllegalStateException(cpFile + " or the module's test classes are missing: build them with"
                    + " mvn -B -ntp -pl bench -am package -DskipTests (bench/run does)");
        }
        String classPath = module.resolve("target/test-classes") + java.io.File.pathSeparator + module.resolve("target/classes")
                + java.io.File.pathSeparator + Files.readString(cpFile).strip();
        return new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xms256m", "-Xmx1g",
                "-cp", classPath, MAIN, env.jdbcUrl, env.user, env.password == null ? "" : env.password, env.schema,
                bootstrapOrDrop, name));
    }

    /** The PostgreSQL process that streams the slot to the engine (its walsender), or none when it is not active. */
    List<Long> walsender() throws java.sql.SQLException {
        try (java.sql.Connection c = env.adminConnection();
                java.sql.PreparedStatement ps = c.prepareStatement(
                        "SELECT active_pid FROM pg_replication_slots WHERE slot_name = ? AND active")) {
            ps.setString(1, name);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                return rs.next() ? List.of(rs.getLong(1)) : List.of();
            }
        }
    }

    private void await(String line, Duration limit) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (System.nanoTime() < deadline) {
            if (Files.readString(log, StandardCharsets.UTF_8).lines().anyMatch(line::equals)) {
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
        Process drop = new ProcessBuilder(command(env, "drop", name)).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        if (!drop.waitFor(60, TimeUnit.SECONDS) || drop.exitValue() != 0) {
            drop.destroyForcibly();
            throw new IllegalStateException("replication slot " + name + " may be left behind (see " + log
                    + "): SELECT pg_drop_replication_slot('" + name + "'); DROP PUBLICATION " + name + ";");
        }
    }
}
