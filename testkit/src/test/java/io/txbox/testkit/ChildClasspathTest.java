package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The broker's class path takes Kafka's own artifacts at the broker's version when the repository holds them. */
class ChildClasspathTest {
    static Path jar(Path repo, String group, String artifact, String version) throws Exception {
        Path dir = repo.resolve(group).resolve(artifact).resolve(version);
        Files.createDirectories(dir);
        return Files.createFile(dir.resolve(artifact + "-" + version + ".jar"));
    }

    @Test
    void sameVersionAs_olderKafkaClients_isReplacedByTheBrokersVersion(@TempDir Path repo) throws Exception {
        Path kafka = jar(repo, "org/apache/kafka", "kafka_2.13", "4.4.0");
        Path oldClients = jar(repo, "org/apache/kafka", "kafka-clients", "4.3.0");
        Path newClients = jar(repo, "org/apache/kafka", "kafka-clients", "4.4.0");
        assertThat(ChildClasspath.sameVersionAs(kafka, oldClients)).isEqualTo(newClients);
        assertThat(ChildClasspath.sameVersionAs(kafka, newClients)).isEqualTo(newClients);
    }

    @Test
    void sameVersionAs_otherGroupsOrAMissingVersion_stayAsTheyAre(@TempDir Path repo) throws Exception {
        Path kafka = jar(repo, "org/apache/kafka", "kafka_2.13", "4.4.0");
        Path other = jar(repo, "io/debezium", "debezium-api", "3.6.1.Final");
        Path onlyOld = jar(repo, "org/apache/kafka", "connect-file", "4.3.0");
        assertThat(ChildClasspath.sameVersionAs(kafka, other)).isEqualTo(other);
        assertThat(ChildClasspath.sameVersionAs(kafka, onlyOld)).isEqualTo(onlyOld);
    }
}
