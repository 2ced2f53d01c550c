package io.txbox.relay.standalone;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RedactionTest {
    @Test
    void url_masksPasswordKeepsUser() {
        assertThat(Redaction.url("amqp://guest:guest@rabbit:5672/vh")).isEqualTo("amqp://guest:****@rabbit:5672/vh");
        assertThat(Redaction.url("jdbc:postgresql://h/db?user=a&password=x&ssl=true"))
                .isEqualTo("jdbc:postgresql://h/db?user=a&password=****&ssl=true");
        assertThat(Redaction.url("amqp://rabbit:5672")).isEqualTo("amqp://rabbit:5672");
    }

    @Test
    void value_secretKeyIsMasked() {
        assertThat(Redaction.value("txbox.jdbc.password", "x")).isEqualTo("****");
        assertThat(Redaction.value("txbox.kafka.sasl.jaas.config", "x")).isEqualTo("****");
        assertThat(Redaction.value("txbox.kafka.ssl.key.password", "x")).isEqualTo("****");
        assertThat(Redaction.value("txbox.relay.batch-size", "5")).isEqualTo("5");
    }

    @Test
    void scrub_registeredSecretAnywhere() {
        Redaction.register("sup3r-s3cret");
        assertThat(Redaction.scrub("FATAL: password sup3r-s3cret rejected")).isEqualTo("FATAL: password **** rejected");
        assertThat(Redaction.scrub("login module password=\"abc\";")).doesNotContain("abc");
    }
}
