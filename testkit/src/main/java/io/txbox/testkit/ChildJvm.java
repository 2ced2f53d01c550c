package io.txbox.testkit;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * Runs a {@code main} class of the test class path in a child JVM and returns what it printed,
 * for tests of what a different class path does (a missing optional dependency, say):
 *
 * <pre>{@code
 * ChildJvm.Result r = ChildJvm.run(Probe.class, entry -> !entry.contains("amqp-client"), Duration.ofSeconds(60));
 * }</pre>
 *
 * The child's output goes to a file, so a child that never ends cannot block the test: after
 * {@code timeout} it is killed and the result says so.
 */
public final class ChildJvm {
    private ChildJvm() {}

    /** Exit code (-1 when killed at the timeout) and everything the child printed. */
    public record Result(int exitCode, String output, boolean timedOut) {}

    /** Runs {@code main} with this JVM's class path, keeping only the entries {@code keep} accepts. */
    public static Result run(Class<?> main, Predicate<String> keep, Duration timeout, String... args) {
        String classPath = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(keep).collect(Collectors.joining(File.pathSeparator));
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp", classPath, main.getName()));
        command.addAll(List.of(args));
        Path out = null;
        try {
            out = Files.createTempFile("txbox-child-", ".log");
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            boolean ended = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!ended) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            String output = Files.readString(out, StandardCharsets.UTF_8);
            return new Result(ended ? p.exitValue() : -1, output, !ended);
        } catch (IOException e) {
            throw new IllegalStateException("could not run " + main.getName() + " in a child JVM: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for " + main.getName(), e);
        } finally {
            if (out != null) {
                try {
                    Files.deleteIfExists(out);
                } catch (IOException ignored) {
                    // a temp file left behind is harmless
                }
            }
        }
    }
}
