package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import io.micrometer.core.instrument.MeterRegistry;
import io.txbox.TxboxTables;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.micrometer.MicrometerInboxListener;
import io.txbox.relay.micrometer.RelayMetrics;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayStatus;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRabbit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The embedded relay: started with the application context, publishing what a
 * {@code @Transactional} service sent through Spring Boot's Kafka and RabbitMQ connection
 * settings, and releasing its lanes when the context closes; on each database.
 */
class EmbeddedRelayIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();
    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();
    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void transactionalSend_publishedToKafkaAndRabbitMq_contextCloseReleasesLanes(TestDatabase db) throws Exception {
        String topic = KAFKA.uniqueTopic("payments");
        KAFKA.createTopic(topic, 1);
        // RabbitMQ names are per class: the run on each database gets its own
        String dbName = db.kind().name().toLowerCase(Locale.ROOT);
        String exchange = RABBIT.name("shipping-" + dbName);
        String queue = RABBIT.name("shipping-queue-" + dbName);
        try (Connection rabbit = RABBIT.newConnection(); Channel channel = rabbit.createChannel();
                KafkaConsumer<String, String> consumer = new KafkaConsumer<>(KAFKA.consumerConfig(topic),
                        new StringDeserializer(), new StringDeserializer())) {
            channel.exchangeDeclare(exchange, "fanout");
            channel.queueDeclare(queue, false, false, false, null);
            channel.queueBind(queue, exchange, "");
            consumer.subscribe(List.of(topic));

            TxboxTables tables;
            JdbcTemplate jdbc;
            try (ConfigurableApplicationContext context = start(db, topic, exchange)) {
                tables = context.getBean(TxboxTables.class);
                jdbc = context.getBean(JdbcTemplate.class);
                Relay relay = context.getBean(Relay.class);
                assertThat(relay.status().state()).isEqualTo(RelayStatus.State.RUNNING);
                OrderService orders = context.getBean(OrderService.class);

                assertThatThrownBy(() -> orders.place("order-refused", true)).hasMessageContaining("refused");
                orders.place("order-1", false);

                List<ConsumerRecord<String, String>> records = new ArrayList<>();
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    consumer.poll(Duration.ofMillis(200)).forEach(records::add);
                    assertThat(records).extracting(ConsumerRecord::key).contains("order-1");
                });
                assertThat(records).extracting(ConsumerRecord::value).containsExactly("charge order-1");
                GetResponse shipped = await().atMost(Duration.ofSeconds(30))
                        .until(() -> channel.basicGet(queue, true), r -> r != null);
                assertThat(new String(shipped.getBody(), StandardCharsets.UTF_8)).isEqualTo("ship order-1");
                assertThat(channel.basicGet(queue, true)).as("the rolled-back order sent nothing").isNull();
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                        assertThat(count(jdbc, tables.outboxTable())).isZero());

                MeterRegistry meters = context.getBean(MeterRegistry.class);
                await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                    assertThat(meters.find(RelayMetrics.PUBLISHED).tags("destination", "payments", "broker", "kafka")
                            .counter()).isNotNull().extracting(c -> c.count()).isEqualTo(1.0);
                    assertThat(meters.find(RelayMetrics.PUBLISHED).tags("destination", "shipping", "broker", "rabbitmq")
                            .counter()).isNotNull().extracting(c -> c.count()).isEqualTo(1.0);
                });
                Outcome outcome = context.getBean(TxboxTemplate.class)
                        .process(InboundMessage.of("delivery-1", "x".getBytes(StandardCharsets.UTF_8)), (tx, m) -> null);
                assertThat(outcome.status()).isEqualTo(Outcome.Status.PROCESSED);
                assertThat(meters.get(MicrometerInboxListener.OUTCOMES).tag("outcome", "first").counter().count())
                        .isEqualTo(1);

                HealthIndicator health = context.getBean("txboxRelayHealthIndicator", HealthIndicator.class);
                Health h = health.health(true);
                assertThat(h.getStatus()).isEqualTo(Status.UP);
                assertThat(h.getDetails()).containsEntry("database", "UP").containsKey("lanesHeld")
                        .extractingByKey("brokers", InstanceOfAssertFactories.MAP)
                        .containsEntry("payments", "UP").containsEntry("shipping", "UP");
                assertThat(count(jdbc, tables.relayLaneTable() + " WHERE owner IS NOT NULL"))
                        .as("lanes held while running").isPositive();
            }
            try (java.sql.Connection c = db.connection(); var rs = c.createStatement().executeQuery(
                    "SELECT count(*) FROM " + tables.relayLaneTable() + " WHERE owner IS NOT NULL")) {
                rs.next();
                assertThat(rs.getLong(1)).as("lanes still held after the context closed").isZero();
            }
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void health_exchangeMissing_downNamingTheExchange(TestDatabase db) {
        String topic = KAFKA.uniqueTopic("payments");
        KAFKA.createTopic(topic, 1);
        String missing = RABBIT.name("never-declared");
        try (ConfigurableApplicationContext context = start(db, topic, missing)) {
            Health h = context.getBean("txboxRelayHealthIndicator", HealthIndicator.class).health(true);
            assertThat(h.getStatus()).isEqualTo(Status.DOWN);
            assertThat(h.getDetails()).containsEntry("database", "UP")
                    .extractingByKey("brokers", InstanceOfAssertFactories.MAP)
                    .containsEntry("payments", "UP")
                    .extractingByKey("shipping", InstanceOfAssertFactories.STRING).startsWith("DOWN").contains(missing);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void routes_unknownBroker_failsStartupNamingTheRoute(TestDatabase db) {
        assertStartupFails(db, "txbox.relay.routes.payments=sqs:payments")
                .hasMessageContaining("txbox.relay.routes.payments").hasMessageContaining("sqs:payments")
                .hasMessageContaining("kafka:<topic> or rabbitmq:<exchange>");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void routes_badTopic_failsStartupNamingTheRoute(TestDatabase db) {
        assertStartupFails(db, "txbox.relay.routes.payments=kafka:no spaces")
                .hasMessageContaining("txbox.relay.routes.payments").hasMessageContaining("no spaces");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void routes_none_failsStartupSayingWhatToSet(TestDatabase db) {
        assertStartupFails(db, "txbox.relay.workers=2")
                .hasMessageContaining("txbox.relay.routes").hasMessageContaining("at least one route");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void workers_zero_failsStartupNamingPropertyAndValue(TestDatabase db) {
        assertStartupFails(db, "txbox.relay.workers=0", "txbox.relay.routes.payments=kafka:payments")
                .hasMessageContaining("txbox.relay.workers").hasMessageContaining("'0'");
    }

    private static org.assertj.core.api.AbstractThrowableAssert<?, ? extends Throwable> assertStartupFails(TestDatabase db,
            String... properties) {
        return assertThatThrownBy(() -> new SpringApplicationBuilder(TestApplication.class)
                .properties(TestDatabaseProperties.properties(db, db.schema()))
                .properties("spring.flyway.enabled=false", "txbox.relay.enabled=true",
                        "spring.kafka.bootstrap-servers=" + KAFKA.bootstrapServers())
                .properties(properties).run().close())
                .extracting(NestedExceptionUtils::getMostSpecificCause, InstanceOfAssertFactories.THROWABLE)
                .isInstanceOf(InvalidConfigurationPropertyValueException.class);
    }

    private static ConfigurableApplicationContext start(TestDatabase db, String topic, String exchange) {
        ConnectionFactory rabbit = RABBIT.connectionFactory();
        ConfigurableApplicationContext context = new SpringApplicationBuilder(TestApplication.class)
                .properties(TestDatabaseProperties.properties(db, db.schema()))
                .properties(Map.<String, Object>of(
                        "spring.flyway.enabled", "false",
                        "txbox.relay.enabled", "true",
                        "txbox.relay.routes.payments", "kafka:" + topic,
                        "txbox.relay.routes.shipping", "rabbitmq:" + exchange,
                        "spring.kafka.bootstrap-servers", KAFKA.bootstrapServers(),
                        "spring.rabbitmq.host", rabbit.getHost(),
                        "spring.rabbitmq.port", String.valueOf(rabbit.getPort()),
                        "spring.rabbitmq.username", rabbit.getUsername(),
                        "spring.rabbitmq.password", rabbit.getPassword(),
                        "spring.rabbitmq.virtual-host", rabbit.getVirtualHost()))
                .run();
        context.getBean(JdbcTemplate.class)
                .execute("CREATE TABLE IF NOT EXISTS orders (order_id varchar(64) PRIMARY KEY)");
        return context;
    }

    private static long count(JdbcTemplate jdbc, String tableAndWhere) {
        Long n = jdbc.queryForObject("SELECT count(*) FROM " + tableAndWhere, Long.class);
        return n == null ? 0 : n;
    }
}
