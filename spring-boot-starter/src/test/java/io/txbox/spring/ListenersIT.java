package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.txbox.inbox.Outcome;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestPostgres;
import io.txbox.testkit.TestRabbit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * {@code @KafkaListener} and {@code @RabbitListener} methods made exactly-once by {@link
 * TxboxListeners}, against the real brokers: a handler failure is redelivered and runs again,
 * a redelivered (republished) message is DUPLICATE, and either way the effect happens once.
 */
class ListenersIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();
    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();
    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static String topic;
    static String queue;
    static ConfigurableApplicationContext context;
    static Connection rabbit;

    @BeforeAll
    static void start() throws Exception {
        topic = KAFKA.uniqueTopic("payments");
        KAFKA.createTopic(topic, 1);
        queue = RABBIT.name("shipping");
        rabbit = RABBIT.newConnection();
        try (Channel channel = rabbit.createChannel()) {
            channel.queueDeclare(queue, false, false, false, null);
        }
        ConnectionFactory f = RABBIT.connectionFactory();
        context = new SpringApplicationBuilder(TestApplication.class, PaymentListeners.class)
                .properties(TestDatabaseProperties.properties(PG, PG.schema()))
                .properties(Map.<String, Object>of(
                        "spring.flyway.enabled", "false",
                        "test.topic", topic,
                        "test.queue", queue,
                        "spring.kafka.bootstrap-servers", KAFKA.bootstrapServers(),
                        "spring.kafka.consumer.auto-offset-reset", "earliest",
                        "spring.kafka.consumer.value-deserializer",
                        "org.apache.kafka.common.serialization.ByteArrayDeserializer",
                        "spring.rabbitmq.host", f.getHost(),
                        "spring.rabbitmq.port", String.valueOf(f.getPort()),
                        "spring.rabbitmq.username", f.getUsername(),
                        "spring.rabbitmq.password", f.getPassword()))
                .properties("spring.rabbitmq.virtual-host=" + f.getVirtualHost())
                .run();
    }

    @AfterAll
    static void stop() throws Exception {
        if (context != null) {
            context.close();
        }
        if (rabbit != null) {
            rabbit.close();
        }
    }

    @Test
    void kafkaListener_failureThenRedelivery_effectOnce_republishedDuplicate() throws Exception {
        PaymentListeners listeners = context.getBean(PaymentListeners.class);
        listeners.failFirst.add("order-k1:pay");
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(KAFKA.producerConfig(),
                new StringSerializer(), new ByteArraySerializer())) {
            producer.send(record("order-k1:pay", "charge 1")).get();
            await().atMost(Duration.ofSeconds(60)).until(() -> listeners.outcomes("order-k1:pay").contains(Outcome.Status.PROCESSED));
            producer.send(record("order-k1:pay", "charge 1")).get(); // the relay published it again
            await().atMost(Duration.ofSeconds(60)).until(() -> listeners.outcomes("order-k1:pay").contains(Outcome.Status.DUPLICATE));
        }
        assertThat(listeners.calls("order-k1:pay")).as("handler runs: the failed attempt and the redelivery").isEqualTo(2);
        assertThat(effects("order-k1:pay")).isEqualTo(1);
    }

    @Test
    void rabbitListener_failureThenRedelivery_effectOnce_republishedDuplicate() throws Exception {
        PaymentListeners listeners = context.getBean(PaymentListeners.class);
        listeners.failFirst.add("order-r1:ship");
        try (Channel channel = rabbit.createChannel()) {
            publish(channel, "order-r1:ship", "ship 1");
            await().atMost(Duration.ofSeconds(60)).until(() -> listeners.outcomes("order-r1:ship").contains(Outcome.Status.PROCESSED));
            publish(channel, "order-r1:ship", "ship 1");
            await().atMost(Duration.ofSeconds(60)).until(() -> listeners.outcomes("order-r1:ship").contains(Outcome.Status.DUPLICATE));
        }
        assertThat(listeners.calls("order-r1:ship")).as("handler runs: the failed attempt and the redelivery").isEqualTo(2);
        assertThat(effects("order-r1:ship")).isEqualTo(1);
    }

    @Test
    void rabbitListener_missingKey_rejectedOnceNotRedeliveredInALoop() throws Exception {
        PaymentListeners listeners = context.getBean(PaymentListeners.class);
        try (Channel channel = rabbit.createChannel()) {
            channel.basicPublish("", queue, new AMQP.BasicProperties.Builder().headers(Map.of("case", "no-key")).build(),
                    "no key".getBytes(StandardCharsets.UTF_8));
            await().atMost(Duration.ofSeconds(30)).until(() -> listeners.keyless.get() >= 1);
            publish(channel, "order-r2:ship", "ship 2");
            await().atMost(Duration.ofSeconds(30)).until(() -> listeners.outcomes("order-r2:ship").contains(Outcome.Status.PROCESSED));
        }
        assertThat(listeners.keyless.get()).as("deliveries of the message without a key").isEqualTo(1);
        assertThat(effects("order-r2:ship")).isEqualTo(1);
    }

    private void publish(Channel channel, String key, String body) throws Exception {
        channel.basicPublish("", queue, new AMQP.BasicProperties.Builder().headers(Map.of("idempotency-key", key)).build(),
                body.getBytes(StandardCharsets.UTF_8));
    }

    private static ProducerRecord<String, byte[]> record(String key, String body) {
        ProducerRecord<String, byte[]> r = new ProducerRecord<>(topic, "order", body.getBytes(StandardCharsets.UTF_8));
        r.headers().add("idempotency-key", key.getBytes(StandardCharsets.UTF_8));
        return r;
    }

    private static long effects(String key) {
        Long n = context.getBean(JdbcTemplate.class).queryForObject("SELECT count(*) FROM effects WHERE k = ?", Long.class, key);
        return n == null ? 0 : n;
    }
}
