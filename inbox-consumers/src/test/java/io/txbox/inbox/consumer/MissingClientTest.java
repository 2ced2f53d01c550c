package io.txbox.inbox.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.testkit.ChildJvm;
import java.lang.reflect.Proxy;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** Without the optional broker client, the consumer's builder names the artifact to add. */
class MissingClientTest {
    /** Builds the consumer named by args[0] and prints what happened. */
    public static void main(String[] args) {
        Inbox inbox = Inbox.builder("missing-client").build();
        DataSource ds = (DataSource) Proxy.newProxyInstance(MissingClientTest.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (p, m, a) -> null);
        Handler handler = (tx, message) -> null;
        try {
            Object builder = args[0].equals("rabbitmq")
                    ? RabbitInboxConsumer.builder(inbox, ds, handler)
                    : KafkaInboxConsumer.builder(inbox, ds, handler);
            System.out.println("BUILT " + builder);
        } catch (Throwable t) {
            System.out.println("THREW " + t);
        }
    }

    @Test
    void rabbitConsumer_withoutAmqpClient_namesTheArtifact() {
        ChildJvm.Result r = ChildJvm.run(MissingClientTest.class, e -> !e.contains("amqp-client"), Duration.ofSeconds(90),
                "rabbitmq");
        assertThat(r.output()).contains("THREW io.txbox.ConfigException: RabbitInboxConsumer needs com.rabbitmq:amqp-client")
                .doesNotContain("NoClassDefFoundError");
    }

    @Test
    void kafkaConsumer_withoutKafkaClients_namesTheArtifact() {
        ChildJvm.Result r = ChildJvm.run(MissingClientTest.class, e -> !e.contains("kafka-clients"), Duration.ofSeconds(90),
                "kafka");
        assertThat(r.output()).contains("THREW io.txbox.ConfigException: KafkaInboxConsumer needs org.apache.kafka:kafka-clients")
                .doesNotContain("NoClassDefFoundError");
    }

    @Test
    void rabbitConsumer_withAmqpClient_builds() {
        ChildJvm.Result r = ChildJvm.run(MissingClientTest.class, e -> true, Duration.ofSeconds(90), "rabbitmq");
        assertThat(r.output()).contains("BUILT ");
    }
}
