package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.testkit.ChildJvm;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Without the optional broker client, the publisher's builder names the artifact to add. */
class MissingClientTest {
    /** Builds the publisher named by args[0] (no connection is opened) and prints what happened. */
    public static void main(String[] args) {
        try {
            Object builder = args[0].equals("rabbitmq")
                    ? RabbitPublisher.builder().connectionName("missing-client")
                    : KafkaPublisher.builder().bootstrapServers("127.0.0.1:1");
            System.out.println("BUILT " + builder);
        } catch (Throwable t) {
            System.out.println("THREW " + t);
        }
    }

    @Test
    void rabbitPublisher_withoutAmqpClient_namesTheArtifact() {
        ChildJvm.Result r = ChildJvm.run(MissingClientTest.class, e -> !e.contains("amqp-client"), Duration.ofSeconds(90),
                "rabbitmq");
        assertThat(r.output()).contains("THREW io.txbox.ConfigException: RabbitPublisher needs com.rabbitmq:amqp-client")
                .doesNotContain("NoClassDefFoundError");
    }

    @Test
    void kafkaPublisher_withoutKafkaClients_namesTheArtifact() {
        ChildJvm.Result r = ChildJvm.run(MissingClientTest.class, e -> !e.contains("kafka-clients"), Duration.ofSeconds(90),
                "kafka");
        assertThat(r.output()).contains("THREW io.txbox.ConfigException: KafkaPublisher needs org.apache.kafka:kafka-clients")
                .doesNotContain("NoClassDefFoundError");
    }

    @Test
    void publishers_withTheirClients_build() {
        assertThat(ChildJvm.run(MissingClientTest.class, e -> true, Duration.ofSeconds(90), "rabbitmq").output())
                .contains("BUILT ");
        assertThat(ChildJvm.run(MissingClientTest.class, e -> true, Duration.ofSeconds(90), "kafka").output())
                .contains("BUILT ");
    }
}
