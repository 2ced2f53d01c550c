package io.txbox.debezium;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.internal.JsonStrings;
import io.txbox.outbox.OutboxMessage;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import org.junit.jupiter.api.Test;

/** The transform on its own, on change events shaped as Debezium's PostgreSQL and MariaDB connectors shape them. */
class TxboxOutboxRouterTest {
    static final Schema PG_ROW = row(SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build(), Schema.BOOLEAN_SCHEMA);
    static final Schema MARIADB_ROW = row(Schema.OPTIONAL_STRING_SCHEMA, Schema.INT16_SCHEMA);

    static Schema row(Schema headerColumn, Schema captured) {
        return SchemaBuilder.struct().name("outbox.Value")
                .field("id", Schema.INT64_SCHEMA).field("step_key", Schema.STRING_SCHEMA)
                .field("original_key", Schema.STRING_SCHEMA).field("destination", Schema.STRING_SCHEMA)
                .field("routing_key", Schema.OPTIONAL_STRING_SCHEMA).field("payload", Schema.BYTES_SCHEMA)
                .field("header_names", headerColumn).field("header_values", headerColumn)
                .field("content_type", Schema.OPTIONAL_STRING_SCHEMA).field("traceparent", Schema.OPTIONAL_STRING_SCHEMA)
                .field("tracestate", Schema.OPTIONAL_STRING_SCHEMA).field("captured", captured).build();
    }

    static SourceRecord event(String op, Schema rowSchema, Struct row) {
        Schema envelope = SchemaBuilder.struct().name("outbox.Envelope").field("op", Schema.STRING_SCHEMA)
                .field("before", SchemaBuilder.struct().optional().build())
                .field("after", rowSchema.isOptional() ? rowSchema : optional(rowSchema)).build();
        Struct value = new Struct(envelope).put("op", op);
        if (row != null) {
            Struct after = new Struct(envelope.field("after").schema());
            row.schema().fields().forEach(f -> after.put(f.name(), row.get(f)));
            value.put("after", after);
        }
        return new SourceRecord(Map.of(), Map.of(), "server.s.txbox_outbox", null, null, null, envelope, value, 1L);
    }

    static Schema optional(Schema s) {
        SchemaBuilder b = SchemaBuilder.struct().name(s.name()).optional();
        s.fields().forEach(f -> b.field(f.name(), f.schema()));
        return b.build();
    }

    static Struct pgRow(boolean captured, List<String> names, List<String> values) {
        return new Struct(PG_ROW).put("id", 7L).put("step_key", "o-1:pay").put("original_key", "o-1")
                .put("destination", "payments").put("routing_key", "acct-1").put("payload", "{\"a\":1}".getBytes(UTF_8))
                .put("header_names", names).put("header_values", values).put("content_type", "application/json")
                .put("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").put("tracestate", null)
                .put("captured", captured);
    }

    static TxboxOutboxRouter<SourceRecord> router(Map<String, ?> config) {
        TxboxOutboxRouter<SourceRecord> r = new TxboxOutboxRouter<>();
        r.configure(config);
        return r;
    }

    /** The headers as Kafka Connect's default header converter writes them. */
    static List<String> serialized(SourceRecord r) {
        List<String> out = new ArrayList<>();
        try (SimpleHeaderConverter c = new SimpleHeaderConverter()) {
            for (Header h : r.headers()) {
                out.add(h.key() + "=" + new String(c.fromConnectHeader(r.topic(), h.key(), h.schema(), h.value()), UTF_8));
            }
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
        return out;
    }

    @Test
    void headerNames_areTheRelays() {
        assertThat(List.of(TxboxOutboxRouter.IDEMPOTENCY_KEY, TxboxOutboxRouter.ORIGINAL_KEY, TxboxOutboxRouter.CONTENT_TYPE,
                TxboxOutboxRouter.TRACEPARENT, TxboxOutboxRouter.TRACESTATE)).containsExactly(
                OutboxMessage.IDEMPOTENCY_KEY_HEADER, OutboxMessage.ORIGINAL_KEY_HEADER, OutboxMessage.CONTENT_TYPE_HEADER,
                OutboxMessage.TRACEPARENT_HEADER, OutboxMessage.TRACESTATE_HEADER);
    }

    @Test
    void apply_capturedInsert_becomesTheRelaysRecord() {
        SourceRecord out = router(Map.of()).apply(event("c", PG_ROW, pgRow(true, List.of("tenant", "x-b"), List.of("t1", "ü"))));
        assertThat(out.topic()).isEqualTo("payments");
        assertThat(new String((byte[]) out.key(), UTF_8)).isEqualTo("acct-1");
        assertThat(new String((byte[]) out.value(), UTF_8)).isEqualTo("{\"a\":1}");
        assertThat(serialized(out)).containsExactly("idempotency-key=o-1:pay", "txbox-original-key=o-1",
                "content-type=application/json", "traceparent=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                "tenant=t1", "x-b=ü");
    }

    @Test
    void apply_topicFormat_namesTheTopic() {
        SourceRecord out = router(Map.of("topic.format", "orders.${destination}.v1"))
                .apply(event("c", PG_ROW, pgRow(true, null, null)));
        assertThat(out.topic()).isEqualTo("orders.payments.v1");
        assertThat(serialized(out)).hasSize(4);
    }

    @Test
    void apply_mariadbJsonHeaders_andTinyintCaptured() {
        List<String> names = List.of("quote\"d", "line\nbreak", "emoji😀");
        List<String> values = List.of("a\\b", "\u0001", "é");
        Struct row = new Struct(MARIADB_ROW).put("id", 7L).put("step_key", "o-1:pay").put("original_key", "o-1")
                .put("destination", "payments").put("routing_key", null).put("payload", ByteBuffer.wrap(new byte[] {0, 1, 2}))
                .put("header_names", JsonStrings.encode(names)).put("header_values", JsonStrings.encode(values))
                .put("captured", (short) 1);
        SourceRecord out = router(Map.of()).apply(event("c", MARIADB_ROW, row));
        assertThat(out.key()).isNull();
        assertThat((byte[]) out.value()).containsExactly(0, 1, 2);
        List<String> expected = new ArrayList<>(List.of("idempotency-key=o-1:pay", "txbox-original-key=o-1"));
        for (int i = 0; i < names.size(); i++) {
            expected.add(names.get(i) + "=" + values.get(i));
        }
        assertThat(serialized(out)).containsExactlyElementsOf(expected);
    }

    @Test
    void apply_dropsEverythingButCapturedInserts() {
        TxboxOutboxRouter<SourceRecord> r = router(Map.of());
        assertThat(r.apply(event("c", PG_ROW, pgRow(false, null, null)))).as("a relay's row").isNull();
        assertThat(r.apply(event("d", PG_ROW, null))).as("the delete after the insert").isNull();
        assertThat(r.apply(event("u", PG_ROW, pgRow(true, null, null)))).as("an update").isNull();
        assertThat(r.apply(event("r", PG_ROW, pgRow(true, null, null)))).as("a snapshot read").isNull();
        assertThat(r.apply(new SourceRecord(Map.of(), Map.of(), "t", null, null, null, null, null))).as("a tombstone").isNull();
        Schema heartbeat = SchemaBuilder.struct().field("ts_ms", Schema.INT64_SCHEMA).build();
        assertThat(r.apply(new SourceRecord(Map.of(), Map.of(), "__debezium-heartbeat.s", heartbeat,
                new Struct(heartbeat).put("ts_ms", 1L)))).as("a heartbeat").isNull();
    }

    @Test
    void apply_tableWithoutCapturedColumn_failsNamingTheMigration() {
        Schema old = SchemaBuilder.struct().field("step_key", Schema.STRING_SCHEMA).build();
        assertThatThrownBy(() -> router(Map.of()).apply(event("c", old, new Struct(old).put("step_key", "k"))))
                .isInstanceOf(DataException.class).hasMessageContaining("captured").hasMessageContaining("migration version 6");
    }

    @Test
    void apply_malformedJsonHeaders_failsNamingTheColumn() {
        Struct row = new Struct(MARIADB_ROW).put("id", 7L).put("step_key", "o-1:pay").put("original_key", "o-1")
                .put("destination", "payments").put("payload", new byte[0])
                .put("header_names", "[\"a\"").put("header_values", "[\"b\"]").put("captured", (short) 1);
        assertThatThrownBy(() -> router(Map.of()).apply(event("c", MARIADB_ROW, row)))
                .isInstanceOf(DataException.class).hasMessageContaining("header_names").hasMessageContaining("JSON array");
    }

    @Test
    void configure_blankTopicFormat_isRefused() {
        assertThatThrownBy(() -> router(Map.of("topic.format", " "))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("topic.format");
    }

    @Test
    void jsonStringArray_readsWhatTheOutboxWrites() {
        List<String> values = List.of("", "plain", "\"\\/\b\f\n\r\t", "\u0000\u001f", "ünïcödé 😀");
        assertThat(JsonStringArray.parse(JsonStrings.encode(values))).containsExactlyElementsOf(values);
        assertThat(JsonStringArray.parse(" [ \"a\" , \"b\" ] ")).containsExactly("a", "b");
        assertThat(JsonStringArray.parse("[]")).isEmpty();
        for (String bad : List.of("", "[", "[\"a\",]", "[1]", "[\"a\"] x", "[\"\\x\"]", "[\"\\u12\"]")) {
            assertThatThrownBy(() -> JsonStringArray.parse(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
        }
    }
}
