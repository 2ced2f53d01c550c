package io.txbox.testkit;

import io.txbox.testkit.kafka.BrokerMain;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import org.jspecify.annotations.Nullable;

/**
 * The class path of the broker's child JVM: the jars of this JVM, without the directories of the
 * code under test, so that its logging configuration and classes stay out of the broker.
 */
final class ChildClasspath {
  private ChildClasspath() {}

  static List<Path> compute() {
    Path own = codeSource(BrokerMain.class);
    Path kafka = kafkaJar();
    Set<Path> result = new LinkedHashSet<>();
    if (own != null) {
      result.add(own);
    }
    for (Path entry : expand(System.getProperty("java.class.path", ""))) {
      if (Files.isRegularFile(entry) && entry.getFileName().toString().endsWith(".jar")) {
        result.add(sameVersionAs(kafka, entry));
      }
    }
    result.add(kafka);
    return new ArrayList<>(result);
  }

  /**
   * {@code entry}, or, when it is another version of an {@code org.apache.kafka} artifact than the
   * broker's own jar in a Maven repository layout ({@code .../org/apache/kafka/NAME/VERSION/}), that
   * artifact at the broker's version if the repository holds it. A test class path may carry older
   * Kafka clients (a library built against them, such as Debezium's embedded engine), and the broker
   * fails on clients older than itself.
   */
  static Path sameVersionAs(Path kafka, Path entry) {
    Path kafkaVersionDir = kafka.getParent();
    Path entryVersionDir = entry.getParent();
    if (kafkaVersionDir == null || entryVersionDir == null || kafkaVersionDir.getParent() == null
        || entryVersionDir.getParent() == null) {
      return entry;
    }
    Path kafkaGroup = kafkaVersionDir.getParent().getParent();
    Path entryArtifact = entryVersionDir.getParent();
    String version = kafkaVersionDir.getFileName().toString();
    if (kafkaGroup == null || !kafkaGroup.equals(entryArtifact.getParent())
        || entryVersionDir.getFileName().toString().equals(version)) {
      return entry;
    }
    String artifact = entryArtifact.getFileName().toString();
    Path aligned = entryArtifact.resolve(version).resolve(artifact + "-" + version + ".jar");
    return Files.isRegularFile(aligned) ? aligned : entry;
  }

  private static Path kafkaJar() {
    try {
      Class<?> main = Class.forName("kafka.Kafka", false, ChildClasspath.class.getClassLoader());
      Path jar = codeSource(main);
      if (jar == null) {
        throw new TestkitException("Kafka: cannot tell which jar holds kafka.Kafka");
      }
      return jar;
    } catch (ClassNotFoundException e) {
      throw new TestkitException("Kafka: kafka.Kafka is not on the test class path; add "
          + "org.apache.kafka:kafka_2.13 (a dependency of txbox-testkit) to the test scope", e);
    }
  }

  /** Splits the class path; a single manifest-only jar (Surefire's booter) is opened up. */
  static List<Path> expand(String classPath) {
    List<Path> entries = new ArrayList<>();
    for (String part : classPath.split(File.pathSeparator)) {
      if (!part.isBlank()) {
        entries.add(Path.of(part).toAbsolutePath().normalize());
      }
    }
    if (entries.size() == 1 && Files.isRegularFile(entries.get(0))) {
      List<Path> fromManifest = manifestClassPath(entries.get(0));
      if (!fromManifest.isEmpty()) {
        return fromManifest;
      }
    }
    return entries;
  }

  private static List<Path> manifestClassPath(Path jar) {
    List<Path> entries = new ArrayList<>();
    try (JarFile file = new JarFile(jar.toFile())) {
      Manifest manifest = file.getManifest();
      String value = manifest == null ? null
          : manifest.getMainAttributes().getValue(Attributes.Name.CLASS_PATH);
      if (value == null) {
        return entries;
      }
      URI base = jar.getParent().toUri();
      for (String item : value.trim().split("\\s+")) {
        entries.add(Path.of(base.resolve(item)));
      }
    } catch (IOException | IllegalArgumentException e) {
      entries.clear();
    }
    return entries;
  }

  static @Nullable Path codeSource(Class<?> type) {
    CodeSource source = type.getProtectionDomain().getCodeSource();
    if (source == null || source.getLocation() == null) {
      return null;
    }
    try {
      return Path.of(source.getLocation().toURI());
    } catch (URISyntaxException | IllegalArgumentException e) {
      return null;
    }
  }
}
