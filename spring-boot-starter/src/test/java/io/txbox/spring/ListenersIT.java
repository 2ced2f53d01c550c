package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.txbox.inbox.Outcome;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRabbit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * {@code @KafkaListener} and {@code @RabbitListener} methods made exactly-once by {@link
 * TxboxListeners}, against the real brokers: a handler failure is redelivered and runs again,
 * a redelivered (republished) message is DUPLICATE, and either way the effect happens once; on
 * each database.
 */
class ListenersIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();
    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();
    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    /** A service on one database, with a topic and a queue of its own. */
    record App(ConfigurableApplicationContext context, String topic, String queue) {}

    /** The service on each database, started by its first test and kept for the class. */
    static final Map<TestDatabase.Kind, App> APPS = new EnumMap<>(TestDatabase.Kind.class);
    static Connection rabbit;

    @BeforeAll
    static void connect() throws Exception {
        rabbit = RABBIT.newConnection();
    }

    static App app(TestDatabase db) {
        return APPS.computeIfAbsent(db.kind(), k -> {
            String topic = KAFKA.uniqueTopic("payments");
            KAFKA.createTopic(topic, 1);
            // RabbitMQ names are per class: one queue per database, or the two applications would share it
            String queue = RABBIT.name("shipping-" + k.name().toLowerCase(Locale.ROOT));
            try (Channel channel = rabbit.createChannel()) {
                channel.queueDeclare(queue, false, false, false, null);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            ConnectionFactory f = RABBIT.connectionFactory();
            ConfigurableApplicationContext context = new SpringApplicationBuilder(TestApplication.class,
                            PaymentListeners.class)
                    .properties(TestDatabaseProperties.properties(db, db.schema()))
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
                    // both applications are up at once: no web server, whose port both would take
                    .web(WebApplicationType.NONE)
                    .run();
            return new App(context, topic, queue);
        });
    }

    @AfterAll
    static void stop() throws Exception {
        APPS.values().forEach(a -> a.context().close());
        APPS.clear();
        if (rabbit != null) {
            rabbit.close();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void kafkaListener_failureThenRedelivery_effectOnce_republishedDuplicate(TestDatabase db) throws Exception {
        App app = app(db);
        PaymentListeners listeners = app.context().getBean(PaymentListeners.class);
        listeners.failFirst.add("order-k1:pay");
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(KAFKA.producerConfig(),
                new StringSerializer(), new ByteArraySerializer())) {
            producer.send(record(app, "order-k1:pay", "charge 1")).get();
            await().atMost(Duration.ofSeconds(60)).until(() -> listeners.outcomes("order-k1:pay").contains(Outcome.Status.PROCESSED));
            producer.send(record(app, "order-k1:pay", "charge 1")).get(); // the relay published it again
            await().atMost(Duration.ofSeconds(60)).until(() -> listeners.outcomes("order-k1:pay").contains(Outcome.Status.DUPLICATE));
        }
        assertThat(listeners.calls("order-k1:pay")).as("handler runs: the failed attempt and the redelivery").isEqualTo(2);
        assertThat(effects(app, "order-k1:pay")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbitListener_failureThenRedelivery_effectOnce_republishedDuplicate(TestDatabase db) throws Exception {
        App app = app(db);
        PaymentListeners listeners = app.context().getBean(PaymentListeners.class);
        listeners.failFirst.add("order-r1:ship");
        try (Channel channel = rabbit.createChannel()) {
            publish(channel, app, "order-r1:ship", "ship 1");
            await().atMost(Duration.ofSeconds(60)).until(() -> listeners.outcomes("order-r1:ship").contains(Outcome.Status.PROCESSED));
            publish(channel, app, "order-r1:ship", "ship 1");
            await().atMost(Duration.ofSeconds(60)).until(() -> listeners.outcomes("order-r1:ship").contains(Outcome.Status.DUPLICATE));
        }
        assertThat(listeners.calls("order-r1:ship")).as("handler runs: the failed attempt and the redelivery").isEqualTo(2);
        assertThat(effects(app, "order-r1:ship")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbitListener_missingKey_rejectedOnceNotRedeliveredInALoop(TestDatabase db) throws Exception {
        App app = app(db);
        PaymentListeners listeners = app.context().getBean(PaymentListeners.class);
        try (Channel channel = rabbit.createChannel()) {
            channel.basicPublish("", app.queue(), new AMQP.BasicProperties.Builder().headers(Map.of("case", "no-key")).build(),
                    "no key".getBytes(StandardCharsets.UTF_8));
            await().atMost(Duration.ofSeconds(30)).until(() -> listeners.keyless.get() >= 1);
            publish(channel, app, "order-r2:ship", "ship 2");
            await().atMost(Duration.ofSeconds(30)).until(() -> listeners.outcomes("order-r2:ship").contains(Outcome.Status.PROCESSED));
        }
        assertThat(listeners.keyless.get()).as("deliveries of the message without a key").isEqualTo(1);
        assertThat(effects(app, "order-r2:ship")).isEqualTo(1);
    }

    private static void publish(Channel channel, App app, String key, String body) throws Exception {
        channel.basicPublish("", app.queue(), new AMQP.BasicProperties.Builder().headers(Map.of("idempotency-key", key)).build(),
                body.getBytes(StandardCharsets.UTF_8));
    }

    private static ProducerRecord<String, byte[]> record(App app, String key, String body) {
        ProducerRecord<String, byte[]> r = new ProducerRecord<>(app.topic(), "order", body.getBytes(StandardCharsets.UTF_8));
        r.headers().add("idempotency-key", key.getBytes(StandardCharsets.UTF_8));
        return r;
    }

    private static long effects(App app, String key) {
        Long n = app.context().getBean(JdbcTemplate.class).queryForObject("SELECT count(*) FROM effects WHERE k = ?", Long.class, key);
        return n == null ? 0 : n;
    }
}
