package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntFunction;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.internal.AbstractRecords;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * The outbox's default cap is Kafka's default {@code max.request.size}, counted as the producer
 * counts a record: a message {@code send} accepts at exactly the cap is published by a relay
 * whose producer keeps the defaults, never dead-lettered.
 */
class KafkaRecordCapIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(4);

    static final Map<TestDatabase.Kind, Db> DB = new EnumMap<>(TestDatabase.Kind.class);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    Db db;

    @BeforeAll
    static void setUp() {
        DBS.all().forEach(d -> DB.put(d.kind(), new Db(d)));
    }

    /** A message with every header the relay publishes, and a payload of {@code n} random bytes. */
    private static OutboxMessage message(int n) {
        byte[] payload = new byte[n];
        ThreadLocalRandom.current().nextBytes(payload); // incompressible, so lz4 cannot shrink it
        return OutboxMessage.builder(StepKey.of("cap-" + "é".repeat(20), "publish"), "cap").routingKey("acct-7")
                .contentType("application/octet-stream").header("x-tenant", "t1")
                .traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").tracestate("vendor=x")
                .payload(payload).build();
    }

    private static int payloadAtCap(IntFunction<OutboxMessage> withPayload, int cap) {
        int n = cap - withPayload.apply(0).recordBytes();
        while (withPayload.apply(n).recordBytes() > cap) {
            n--;
        }
        return n;
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void recordBytes_matchesTheKafkaProducersOwnEstimate(TestDatabase database) {
        db = DB.get(database.kind());
        for (int n : new int[] {0, 63, 64, 8191, 8192, 1 << 20}) {
            OutboxMessage m = message(n);
            assertThat(m.recordBytes()).as("payload of %d bytes", n).isEqualTo(kafkaEstimate(m));
        }
        OutboxMessage bare = OutboxMessage.builder(StepKey.of("k", "s"), "cap").payload(new byte[0]).build();
        assertThat(bare.recordBytes()).isEqualTo(kafkaEstimate(bare));
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void relay_messageExactlyAtTheDefaultCap_isPublishedWithKafkaDefaults(TestDatabase database) {
        db = DB.get(database.kind());
        OutboxMessage atCap = message(payloadAtCap(KafkaRecordCapIT::message, Outbox.DEFAULT_MAX_RECORD_BYTES));
        assertThat(atCap.recordBytes()).isEqualTo(Outbox.DEFAULT_MAX_RECORD_BYTES);
        assertThat(kafkaEstimate(atCap)).isEqualTo(Outbox.DEFAULT_MAX_RECORD_BYTES);

        // an outbox with the default cap accepts it
        Outbox defaults = Outbox.builder().tables(db.tables).build();
        try (var c = db.ds.getConnection()) {
            c.setAutoCommit(false);
            assertThat(defaults.send(c, atCap)).isTrue();
            c.commit();
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }

        String topic = KAFKA.uniqueTopic("cap");
        KAFKA.createTopic(topic, 1);
        KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers(KAFKA.bootstrapServers()).build();
        try (Relay relay = Relay.builder().dataSource(db.ds).tables(db.tables).route("cap", kafka.topic(topic))
                        .pollInterval(Duration.ofMillis(20)).build();
                Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic)) {
            relay.start();
            consumed.awaitStepKeys(1, Duration.ofSeconds(30));
            assertThat(consumed.records.get(0).value()).isEqualTo(atCap.payload());
            await().atMost(Duration.ofSeconds(10)).until(() -> db.outboxRows() == 0);
            assertThat(db.queryLong("SELECT count(*) FROM " + db.table(db.tables.outboxDeadTable())))
                    .isZero();
        }
    }

    /** What the producer computes before it checks max.request.size (KafkaProducer.doSend). */
    private static int kafkaEstimate(OutboxMessage m) {
        var headers = new java.util.ArrayList<Header>();
        headers.add(header(OutboxMessage.IDEMPOTENCY_KEY_HEADER, m.stepKey().value()));
        headers.add(header(OutboxMessage.ORIGINAL_KEY_HEADER, m.stepKey().original()));
        if (m.contentType() != null) {
            headers.add(header(OutboxMessage.CONTENT_TYPE_HEADER, m.contentType()));
        }
        if (m.traceparent() != null) {
            headers.add(header(OutboxMessage.TRACEPARENT_HEADER, m.traceparent()));
        }
        if (m.tracestate() != null) {
            headers.add(header(OutboxMessage.TRACESTATE_HEADER, m.tracestate()));
        }
        m.headers().forEach((k, v) -> headers.add(header(k, v)));
        byte[] key = m.routingKey() == null ? null : m.routingKey().getBytes(StandardCharsets.UTF_8);
        return AbstractRecords.estimateSizeInBytesUpperBound(RecordBatch.CURRENT_MAGIC_VALUE, CompressionType.LZ4,
                key, m.payload(), headers.toArray(Header[]::new));
    }

    private static Header header(String name, String value) {
        return new RecordHeader(name, value.getBytes(StandardCharsets.UTF_8));
    }
}
