package io.txbox.debezium;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Headers;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * Turns Debezium's change events of a txbox outbox table into the records txbox's polling relay
 * publishes for the same rows: the topic named after the row's destination, the routing key as the
 * record key, the payload as the value, and the headers {@value #IDEMPOTENCY_KEY} (the step key),
 * {@value #ORIGINAL_KEY}, {@value #CONTENT_TYPE}, {@value #TRACEPARENT} and {@value #TRACESTATE}
 * when present, then the sender's own headers, in that order, each value as a string. With {@code
 * key.converter} and {@code value.converter} set to {@code
 * org.apache.kafka.connect.converters.ByteArrayConverter} and the default header converter, the
 * Kafka record is byte for byte the relay's.
 *
 * <p>Only inserts of rows marked {@code captured} (written by an outbox in change-data-capture
 * mode) are published. Every other event is dropped: the deletes that follow those inserts,
 * inserts of rows a relay publishes, the relay's updates and deletes, snapshot reads, tombstones,
 * and records that are not change events (heartbeats, schema changes), whose offsets the worker
 * still commits.
 *
 * <p>Configuration: {@value #TOPIC_FORMAT} (default {@value #DEFAULT_TOPIC_FORMAT}), the topic
 * name with {@code ${destination}} replaced by the row's destination.
 *
 * @param <R> the record type (a {@code SourceRecord} in a source connector)
 */
public final class TxboxOutboxRouter<R extends ConnectRecord<R>> implements Transformation<R> {
    /** Header carrying the step key; the same name as txbox's relay. */
    public static final String IDEMPOTENCY_KEY = "idempotency-key";
    /** Header carrying the saga's original key. */
    public static final String ORIGINAL_KEY = "txbox-original-key";
    /** Header carrying the payload's MIME type, when set. */
    public static final String CONTENT_TYPE = "content-type";
    /** W3C trace context header, when set. */
    public static final String TRACEPARENT = "traceparent";
    /** W3C trace state header, when set. */
    public static final String TRACESTATE = "tracestate";

    /** Property: the topic name, with {@code ${destination}} standing for the row's destination. */
    public static final String TOPIC_FORMAT = "topic.format";
    /** Default of {@value #TOPIC_FORMAT}: the topic is the destination itself. */
    public static final String DEFAULT_TOPIC_FORMAT = "${destination}";

    private static final String DESTINATION_PLACEHOLDER = "${destination}";
    private static final ConfigDef CONFIG = new ConfigDef().define(TOPIC_FORMAT, ConfigDef.Type.STRING,
            DEFAULT_TOPIC_FORMAT, new ConfigDef.NonEmptyStringWithoutControlChars(), ConfigDef.Importance.MEDIUM,
            "The topic of a published row, with ${destination} replaced by the row's destination. Default: "
                    + DEFAULT_TOPIC_FORMAT + ".");

    private String topicFormat = DEFAULT_TOPIC_FORMAT;

    @Override
    public void configure(Map<String, ?> configs) {
        Object format = CONFIG.parse(configs).get(TOPIC_FORMAT);
        String f = String.valueOf(format).trim();
        if (f.isEmpty()) {
            throw new ConfigException(TOPIC_FORMAT, format, "must name a topic, for example " + DEFAULT_TOPIC_FORMAT);
        }
        topicFormat = f;
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public R apply(R record) {
        Struct after = capturedInsert(record);
        if (after == null) {
            return null;
        }
        String destination = OutboxRow.string(after, "destination", true);
        String routingKey = OutboxRow.string(after, "routing_key", false);
        byte[] key = routingKey == null ? null : routingKey.getBytes(StandardCharsets.UTF_8);
        return record.newRecord(topicFormat.replace(DESTINATION_PLACEHOLDER, destination), null,
                Schema.OPTIONAL_BYTES_SCHEMA, key, Schema.BYTES_SCHEMA, payload(after), record.timestamp(),
                headers(after));
    }

    /** The row of an insert marked captured, or null for every event this transform drops. */
    private static Struct capturedInsert(ConnectRecord<?> record) {
        if (!(record.value() instanceof Struct value) || value.schema().field("op") == null
                || value.schema().field("after") == null) {
            return null;
        }
        if (!"c".equals(value.getString("op"))) {
            return null;
        }
        Struct after = value.getStruct("after");
        return after != null && OutboxRow.captured(after) ? after : null;
    }

    private static byte[] payload(Struct after) {
        Object p = OutboxRow.required(after, "payload");
        if (p instanceof byte[] bytes) {
            return bytes;
        }
        if (p instanceof ByteBuffer buffer) {
            byte[] bytes = new byte[buffer.remaining()];
            buffer.duplicate().get(bytes);
            return bytes;
        }
        throw new DataException("txbox outbox column payload holds a " + p.getClass().getName()
                + ", not bytes: set the connector's binary.handling.mode to bytes (its default)");
    }

    /** The relay's headers, in the relay's order. */
    private static Headers headers(Struct after) {
        ConnectHeaders headers = new ConnectHeaders();
        headers.addString(IDEMPOTENCY_KEY, OutboxRow.string(after, "step_key", true));
        headers.addString(ORIGINAL_KEY, OutboxRow.string(after, "original_key", true));
        addIfPresent(headers, CONTENT_TYPE, OutboxRow.string(after, "content_type", false));
        addIfPresent(headers, TRACEPARENT, OutboxRow.string(after, "traceparent", false));
        addIfPresent(headers, TRACESTATE, OutboxRow.string(after, "tracestate", false));
        List<String> names = OutboxRow.strings(after, "header_names");
        List<String> values = OutboxRow.strings(after, "header_values");
        if (names.size() != values.size()) {
            throw new DataException("txbox outbox row " + OutboxRow.string(after, "step_key", true) + " has "
                    + names.size() + " header names but " + values.size() + " header values");
        }
        for (int i = 0; i < names.size(); i++) {
            headers.addString(names.get(i), values.get(i));
        }
        return headers;
    }

    private static void addIfPresent(ConnectHeaders headers, String name, String value) {
        if (value != null) {
            headers.addString(name, value);
        }
    }

    @Override
    public void close() {}
}
