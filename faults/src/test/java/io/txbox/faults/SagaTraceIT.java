package io.txbox.faults;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.http.HttpIdempotency;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.Relay;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestPostgres;
import io.txbox.testkit.TestRabbit;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One saga, one trace: an HTTP request with a W3C traceparent sends through the outbox, the
 * relay publishes to Kafka, the Kafka consumer's handler sends on, the relay publishes to
 * RabbitMQ, and the RabbitMQ consumer's handler runs in the same trace, each span the child of
 * the span that sent its message.
 */
class SagaTraceIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass(10);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static final Duration WAIT = Duration.ofSeconds(60);
    static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    static final String CLIENT_SPAN_ID = "00f067aa0ba902b7";

    static final InMemorySpanExporter spans = InMemorySpanExporter.create();
    static OpenTelemetrySdk otel;
    static TxboxTables tables;
    static Outbox outbox;

    @BeforeAll
    static void setUp() {
        otel = OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
                .build();
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        outbox = Outbox.builder().tables(tables).build();
    }

    @AfterAll
    static void tearDown() {
        otel.close();
    }

    @Test
    void saga_httpThroughKafkaAndRabbitMq_isOneTraceWithEachConsumerSpanUnderItsSender() throws Exception {
        String topic = KAFKA.uniqueTopic("orders");
        KAFKA.createTopic(topic, 1);
        KAFKA.createTopic(topic + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX, 1);
        String exchange = RABBIT.name("payments");
        String queue = RABBIT.name("payments-q");
        try (com.rabbitmq.client.Connection admin = RABBIT.newConnection(); Channel ch = admin.createChannel()) {
            ch.exchangeDeclare(exchange, "topic", false, true, null);
            ch.queueDeclare(queue, true, false, false, null);
            ch.queueBind(queue, exchange, "#");
        }
        AtomicReference<SpanContext> lastHandler = new AtomicReference<>();

        HttpIdempotency api = HttpIdempotency.builder(
                Inbox.builder("orders-api").tables(tables).fingerprint(HttpIdempotency.fingerprint()).build(),
                PG.dataSource()).openTelemetry(otel).build();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/orders", api.forHttpServer((tx, exchangeIn) -> {
            send(tx, "order-1", "created", "orders");
            exchangeIn.sendResponseHeaders(201, -1);
            exchangeIn.close();
        }));
        server.start();
        try (KafkaInboxConsumer billing = KafkaInboxConsumer.builder(Inbox.builder("billing").tables(tables).build(),
                        PG.dataSource(), (tx, m) -> {
                            send(tx, m.key(), "charge", "payments");
                            return null;
                        })
                        .bootstrapServers(KAFKA.bootstrapServers()).topics(topic).pollTimeout(Duration.ofMillis(100))
                        .openTelemetry(otel).build();
                RabbitInboxConsumer shipping = RabbitInboxConsumer.builder(
                                Inbox.builder("shipping").tables(tables).build(), PG.dataSource(), (tx, m) -> {
                                    lastHandler.set(Span.current().getSpanContext());
                                    return null;
                                })
                        .connectionFactory(RABBIT.connectionFactory()).queue(queue).deadLetterExchange(queue)
                        .openTelemetry(otel).build();
                KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers(KAFKA.bootstrapServers()).build();
                RabbitPublisher rabbit = RabbitPublisher.builder().connectionFactory(RABBIT.connectionFactory()).build();
                Relay relay = Relay.builder().dataSource(PG.dataSource()).tables(tables)
                        .route("orders", kafka.topic(topic)).route("payments", rabbit.exchange(exchange))
                        .pollInterval(Duration.ofMillis(20)).build()) {
            billing.start();
            shipping.start();
            relay.start();

            HttpResponse<String> response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/orders"))
                    .header("Idempotency-Key", "order-1")
                    .header("traceparent", "00-" + TRACE_ID + "-" + CLIENT_SPAN_ID + "-01")
                    .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).isEqualTo(201);

            await().atMost(WAIT).until(() -> lastHandler.get() != null && spans.getFinishedSpanItems().size() >= 3);
        } finally {
            server.stop(0);
        }

        assertThat(lastHandler.get().getTraceId()).as("trace id inside the last handler").isEqualTo(TRACE_ID);
        List<SpanData> finished = spans.getFinishedSpanItems();
        assertThat(finished).extracting(SpanData::getTraceId).containsOnly(TRACE_ID);
        SpanData request = only(finished, SpanKind.SERVER, "POST");
        SpanData billed = only(finished, SpanKind.CONSUMER, "process billing");
        SpanData shipped = only(finished, SpanKind.CONSUMER, "process shipping");
        assertThat(request.getParentSpanId()).as("the server span continues the client's").isEqualTo(CLIENT_SPAN_ID);
        assertThat(billed.getParentSpanId()).as("Kafka consumer under the request that sent").isEqualTo(request.getSpanId());
        assertThat(shipped.getParentSpanId()).as("RabbitMQ consumer under the Kafka handler that sent")
                .isEqualTo(billed.getSpanId());
        assertThat(shipped.getSpanId()).as("the last handler ran inside its consumer span")
                .isEqualTo(lastHandler.get().getSpanId());
        assertThat(billed.getAttributes().get(AttributeKey.stringKey("txbox.key"))).isEqualTo("order-1:created");
    }

    private static void send(Connection tx, String key, String step, String destination) {
        outbox.send(tx, OutboxMessage.builder(StepKey.of(key, step), destination).routingKey(key)
                .payload("{}".getBytes(UTF_8)).build());
    }

    private static SpanData only(List<SpanData> spans, SpanKind kind, String name) {
        List<SpanData> matching = spans.stream().filter(s -> s.getKind() == kind && s.getName().equals(name)).toList();
        assertThat(matching).as(kind + " span " + name + " in " + spans).hasSize(1);
        return matching.get(0);
    }
}
