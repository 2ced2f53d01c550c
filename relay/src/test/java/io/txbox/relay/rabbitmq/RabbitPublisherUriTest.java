package io.txbox.relay.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link RabbitPublisher.Builder#uri}: no URI the client would silently read as localhost:5672 as guest. */
class RabbitPublisherUriTest {

    @Test
    void uri_portNotANumber_isRefusedNamingThePortWithThePasswordMasked() {
        assertThatThrownBy(() -> RabbitPublisher.builder().uri("amqp://relay:pw-secret-1@127.0.0.1:notaport/%2f"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("\"amqp://relay:****@127.0.0.1:notaport/%2f\"")
                .hasMessageContaining("port \"notaport\", which is not a number from 1 to 65535")
                .hasMessageContaining("write it as amqp://user:password@host:5672/vhost")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("pw-secret-1"));
    }

    @Test
    void uri_hostWithUnderscore_isRefusedNamingTheHost() {
        assertThatThrownBy(() -> RabbitPublisher.builder().uri("amqp://u:p-secret-2@rabbit_prod:5672/"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("host \"rabbit_prod\", which is not a valid host name")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("p-secret-2"));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "http://guest:guest@host:5672/%2f | must start with amqp:// or amqps://",
            "host:5672 | must start with amqp:// or amqps://",
            "amqp:///%2f | names no host",
            "amqp://guest:guest@:5672/%2f | names no host",
            "amqp://guest:guest@host:0/%2f | has port 0, which is not from 1 to 65535",
            "amqp://guest:guest@host:70000/%2f | has port 70000, which is not from 1 to 65535",
            "amqp://guest:guest@host:/%2f | has port \"\", which is not a number",
            "amqp://guest:guest@host:5672/a/b | is refused by the RabbitMQ client",
            "amqp://guest:guest@ho st/%2f | is not a valid URI",
    })
    void uri_malformed_isRefusedSayingWhy(String uri, String why) {
        assertThatThrownBy(() -> RabbitPublisher.builder().uri(uri))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(why)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("guest:guest"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"amqp://localhost", "amqp://guest:guest@127.0.0.1:5672/%2f", "amqps://relay:pw@rabbit.internal:5671/orders",
            "amqp://relay@rabbit:5672/%2f", "AMQP://rabbit-1.example.com", "amqp://[::1]:5672/%2f", "amqp://[::1]/%2f",
            "amqp://guest:guest@rabbit:5672/%2f?heartbeat=10"})
    void uri_wellFormed_isAccepted(String uri) {
        assertThatCode(() -> RabbitPublisher.builder().uri(uri)).doesNotThrowAnyException();
    }

    @Test
    void uri_null_isRefused() {
        assertThatThrownBy(() -> RabbitPublisher.builder().uri(null)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("uri must not be null");
    }
}
