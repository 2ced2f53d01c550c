package io.txbox.relay.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.ConnectionFactory;
import io.txbox.relay.PublishException;
import io.txbox.testkit.TestRabbit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Connecting {@link RabbitPublisher} to a real node: the broker's reason for a refusal reaches the caller. */
class RabbitPublisherConnectIT {
    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    @Test
    void build_withTheTestkitUri_connects() {
        try (RabbitPublisher publisher = RabbitPublisher.builder().uri(RABBIT.uri()).build()) {
            publisher.check(java.time.Duration.ofSeconds(2));
        }
    }

    @Test
    void build_unknownVirtualHost_namesTheBrokersReasonAndTheFix() {
        ConnectionFactory f = RABBIT.connectionFactory();
        String uri = "amqp://" + f.getUsername() + ":" + f.getPassword() + "@" + f.getHost() + ":" + f.getPort() + "/no-such-vhost";

        assertThatThrownBy(() -> RabbitPublisher.builder().uri(uri).build())
                .isInstanceOf(PublishException.class)
                .hasMessageContaining("virtual host \"no-such-vhost\"")
                .hasMessageContaining("vhost no-such-vhost not found")
                .hasMessageContaining("the default virtual host / is written %2f");
    }

    @Test
    void build_emptyVirtualHost_namesTheBrokersReasonAndTheFix() {
        ConnectionFactory f = RABBIT.connectionFactory();
        String uri = "amqp://" + f.getUsername() + ":" + f.getPassword() + "@" + f.getHost() + ":" + f.getPort() + "/";

        assertThatThrownBy(() -> RabbitPublisher.builder().uri(uri).build())
                .isInstanceOf(PublishException.class)
                .hasMessageContaining("virtual host \"\"")
                .hasMessageContaining("not found")
                .hasMessageContaining("amqp://host:5672/ names the empty virtual host");
    }

    @Test
    void build_wrongPassword_saysAccessRefusedAndWhatToCheck() {
        ConnectionFactory f = RABBIT.connectionFactory();
        String uri = "amqp://" + f.getUsername() + ":wrong-pw-31@" + f.getHost() + ":" + f.getPort() + "/%2f";

        assertThatThrownBy(() -> RabbitPublisher.builder().uri(uri).build())
                .isInstanceOf(PublishException.class)
                .hasMessageContaining("ACCESS_REFUSED")
                .hasMessageContaining("check the user and password")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("wrong-pw-31"));
    }
}
