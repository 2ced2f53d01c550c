package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Run in a separate JVM by the shared-broker tests: prints the shared broker's address. */
public final class SharedBrokerProbe {
  private SharedBrokerProbe() {}

  public static void main(String[] args) {
    System.out.println("bootstrap=" + KafkaBroker.shared().bootstrapServers());
  }

  /**
   * Starts a probe JVM with the test's class path and the given {@code -D} options. Its output
   * goes to a file rather than a pipe, so {@link Run#await} can give up on a probe that hangs.
   */
  static Run start(String... systemProperties) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(List.of(java, "-cp",
        System.getProperty("java.class.path"),
        "-Dlogback.configurationFile=" + new File(SharedBrokerProbe.class.getClassLoader()
            .getResource("logback-test.xml").toURI()).getPath()));
    for (String property : systemProperties) {
      command.add("-D" + property);
    }
    command.add(SharedBrokerProbe.class.getName());
    Path output = Files.createTempFile("txbox-probe-", ".log");
    Process process = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(output.toFile()).start();
    return new Run(process, output);
  }

  /** A running probe and the file its output goes to. */
  record Run(Process process, Path output) {
    /** Waits up to {@code timeout} for a clean exit and returns the output; kills it otherwise. */
    String await(Duration timeout) throws Exception {
      boolean exited = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (!exited) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
      String text = Files.readString(output, StandardCharsets.UTF_8);
      Files.deleteIfExists(output);
      assertThat(exited).as("probe still running after %s, killed; its output:%n%s", timeout, text)
          .isTrue();
      assertThat(process.exitValue()).as(text).isZero();
      return text;
    }
  }
}
