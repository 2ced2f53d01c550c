package io.txbox.compat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.TxboxTables;
import io.txbox.inbox.Outcome;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.spring.TxboxListeners;
import io.txbox.spring.TxboxTemplate;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.amqp.core.ExchangeTypes;
import org.springframework.amqp.rabbit.annotation.Exchange;
import org.springframework.amqp.rabbit.annotation.Queue;
import org.springframework.amqp.rabbit.annotation.QueueBinding;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.test.context.EmbeddedKafka;
import org.springframework.messaging.Message;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Kafka and RabbitMQ as a Spring Boot service uses them with txbox, against real brokers (Spring
 * Kafka's embedded KRaft broker over TCP, the RabbitMQ service): a {@code @KafkaListener} made
 * exactly-once by {@link TxboxListeners}, and the embedded relay publishing what a Spring
 * transaction sent through Boot's {@code spring.kafka.*} and {@code spring.rabbitmq.*} settings.
 */
@SpringBootTest(properties = {
    "spring.kafka.bootstrap-servers=${spring.embedded.kafka.brokers}",
    "spring.kafka.consumer.auto-offset-reset=earliest",
    "spring.kafka.consumer.value-deserializer=org.apache.kafka.common.serialization.ByteArrayDeserializer",
    "txbox.relay.enabled=true",
    "txbox.relay.routes.invoices=kafka:" + MessagingTests.INVOICES,
    "txbox.relay.routes.shipments=rabbitmq:${compat.shipments-exchange}"})
@EmbeddedKafka(partitions = 1, topics = {MessagingTests.PAYMENTS, MessagingTests.INVOICES})
@Import(MessagingTests.OrderListeners.class)
@DirtiesContext   // closed after the class, in order; at JVM exit the broker's log directory was deleted under it
class MessagingTests {
    static final String PAYMENTS = "compat.payments";
    static final String INVOICES = "compat.invoices";
    static final String PAYMENTS_GROUP = "compat-payments";
    /** RabbitMQ outlives the run, so the exchange is named per run (and deleted with its queue). */
    static final String SHIPMENTS_EXCHANGE = "compat.shipments." + Long.toHexString(System.nanoTime());

    @DynamicPropertySource
    static void exchange(DynamicPropertyRegistry registry) {
        registry.add("compat.shipments-exchange", () -> SHIPMENTS_EXCHANGE);
    }

    @Autowired OrderListeners listeners;
    @Autowired KafkaTemplate<String, String> kafka;
    @Autowired KafkaAdmin kafkaAdmin;
    @Autowired TxboxTemplate txbox;
    @Autowired PlatformTransactionManager transactions;
    @Autowired JdbcTemplate jdbc;

    @Test
    void kafkaListener_redeliveredAndFailingRecords_eachPaymentOnce_offsetsCommittedAfterTheTransaction() throws Exception {
        listeners.failOnce.add("order-3:pay");
        pay("order-1:pay", "10.00");
        pay("order-1:pay", "10.00");   // delivered again, as after a crash before the offset commit
        pay("order-2:pay", "20.00");
        pay("order-3:pay", "30.00");   // its first attempt fails; the container delivers it again

        TopicPartition partition = new TopicPartition(PAYMENTS, 0);
        try (Admin admin = Admin.create(kafkaAdmin.getConfigurationProperties())) {
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                OffsetAndMetadata committed = admin.listConsumerGroupOffsets(PAYMENTS_GROUP)
                        .partitionsToOffsetAndMetadata().get().get(partition);
                return committed != null && committed.offset() == 4;
            });
        }
        assertThat(listeners.failOnce).as("the failing attempt ran").isEmpty();
        assertThat(listeners.payments).extracting(Payment::outcome).containsExactly(
                "order-1:pay PROCESSED", "order-1:pay DUPLICATE", "order-2:pay PROCESSED", "order-3:pay PROCESSED");
        assertThat(listeners.payments).as("each offset was still uncommitted when its transaction had committed")
                .allSatisfy(p -> assertThat(p.committedOffsetThen()).isLessThanOrEqualTo(p.offset()));
        assertThat(jdbc.queryForList("select step_key || ' ' || amount from " + listeners.paymentsTable
                + " order by step_key", String.class))
                .containsExactly("order-1:pay 10.00", "order-2:pay 20.00", "order-3:pay 30.00");
    }

    @ParameterizedTest
    @ValueSource(strings = {"invoices", "shipments"})   // routed to Kafka and to RabbitMQ
    void outboxSentInASpringTransaction_embeddedRelayPublishesItThroughBootsSettings(String destination) {
        StepKey step = StepKey.of("order-" + destination, "notify");
        new TransactionTemplate(transactions).executeWithoutResult(tx -> txbox.send(
                OutboxMessage.builder(step, destination).payload("notify " + step.value()).build()));

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(listeners.published)
                .contains(new Published(destination, step.value(), "notify " + step.value())));
    }

    private void pay(String stepKey, String amount) throws Exception {
        ProducerRecord<String, String> record = new ProducerRecord<>(PAYMENTS, "order", amount);
        record.headers().add(OutboxMessage.IDEMPOTENCY_KEY_HEADER, stepKey.getBytes(StandardCharsets.UTF_8));
        kafka.send(record).get();
    }

    /** One delivery the payments listener completed, and the group's committed offset right after its transaction. */
    record Payment(String outcome, long offset, long committedOffsetThen) {}

    /** A message the relay published, as a plain listener read it. */
    record Published(String destination, String idempotencyKey, String payload) {}

    /** The service's listeners: payments exactly-once through the inbox; what the relay published, read plainly. */
    static class OrderListeners {
        final String paymentsTable;
        final Set<String> failOnce = ConcurrentHashMap.newKeySet();
        final List<Payment> payments = new CopyOnWriteArrayList<>();
        final List<Published> published = new CopyOnWriteArrayList<>();
        private final TxboxListeners txbox;
        private final JdbcTemplate jdbc;

        OrderListeners(TxboxListeners txbox, JdbcTemplate jdbc, TxboxTables tables) {
            this.txbox = txbox;
            this.jdbc = jdbc;
            paymentsTable = tables.schema() + ".payments";
            jdbc.execute("create table " + paymentsTable + " (step_key text primary key, amount text not null)");
        }

        @KafkaListener(topics = PAYMENTS, groupId = PAYMENTS_GROUP)
        public void onPayment(Message<byte[]> message, Consumer<?, ?> consumer) {
            Outcome outcome = txbox.process(message, (tx, m) -> {   // the offset is committed after this returns
                jdbc.update("insert into " + paymentsTable + " (step_key, amount) values (?, ?)", m.key(),
                        new String(m.payload(), StandardCharsets.UTF_8));
                if (failOnce.remove(m.key())) {
                    throw new IllegalStateException("the payment service is briefly unavailable for " + m.key());
                }
                return null;
            });
            long offset = (Long) message.getHeaders().get(KafkaHeaders.OFFSET);
            OffsetAndMetadata committed = consumer.committed(Set.of(new TopicPartition(PAYMENTS, 0))).values()
                    .stream().filter(o -> o != null).findFirst().orElse(null);
            String key = new String((byte[]) message.getHeaders().get(OutboxMessage.IDEMPOTENCY_KEY_HEADER),
                    StandardCharsets.UTF_8);
            payments.add(new Payment(key + " " + outcome.status(), offset, committed == null ? 0 : committed.offset()));
        }

        @KafkaListener(topics = INVOICES, groupId = "compat-invoices")
        public void onInvoice(ConsumerRecord<String, byte[]> record) {
            Header key = record.headers().lastHeader(OutboxMessage.IDEMPOTENCY_KEY_HEADER);
            published.add(new Published("invoices", new String(key.value(), StandardCharsets.UTF_8),
                    new String(record.value(), StandardCharsets.UTF_8)));
        }

        @RabbitListener(bindings = @QueueBinding(value = @Queue,
                exchange = @Exchange(name = "${compat.shipments-exchange}", type = ExchangeTypes.FANOUT,
                        durable = "false", autoDelete = "true")))
        public void onShipment(org.springframework.amqp.core.Message message) {
            Object key = message.getMessageProperties().getHeaders().get(OutboxMessage.IDEMPOTENCY_KEY_HEADER);
            published.add(new Published("shipments", String.valueOf(key),
                    new String(message.getBody(), StandardCharsets.UTF_8)));
        }
    }
}
