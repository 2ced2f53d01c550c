package io.txbox.dynamodb;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@code main} class of this suite run in its own JVM with the test's class path, so a test can
 * SIGKILL it. Its output goes to {@code dynamodb/target/children/<id>.log}.
 */
final class Child implements AutoCloseable {
    final String id;
    final Process process;
    final Path log;

    private Child(String id, Process process, Path log) {
        this.id = id;
        this.process = process;
        this.log = log;
    }

    /** Starts {@code main} with {@code args} and returns once the child printed {@code ready}. */
    static Child start(Class<?> main, String id, String ready, String... args) throws IOException {
        Path log = Path.of("target", "children", id + ".log");
        Files.createDirectories(log.getParent());
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        Child child = new Child(id, p, log);
        child.awaitOutput(ready, Duration.ofSeconds(90));
        return child;
    }

    /** Waits until the child printed {@code text}; fails with its output if it exits first. */
    void awaitOutput(String text, Duration timeout) {
        await().atMost(timeout).pollInterval(Duration.ofMillis(20)).until(() -> {
            if (!process.isAlive()) {
                throw new IllegalStateException("child " + id + " exited with " + process.exitValue() + ": "
                        + Files.readString(log));
            }
            return Files.readString(log).contains(text);
        });
    }

    /** SIGKILL: the JVM gets no chance to close a connection, commit or ack anything. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("child " + id + " still alive 30 s after SIGKILL");
        }
    }

    /** Stops a child the test did not kill: SIGTERM, then SIGKILL after 20 s. */
    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                kill();
            }
        }
    }
}
