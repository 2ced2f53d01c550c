package io.txbox.bench;

import io.txbox.outbox.OutboxMessage;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;

/**
 * Where e2e-latency's time goes: per message, the moment the relay hands it to its producer
 * and the moment the broker acknowledges it ({@link Published}, a producer interceptor), the
 * moment a receiver's poll returns it ({@link Polled}, a consumer interceptor) and the moment
 * the handler starts ({@link #handling}), all on this JVM's {@link System#nanoTime}. The bare
 * pipeline is split the same way ({@link #BARE}; its first stage is empty: its send call is
 * the producer's). Kafka instantiates the interceptors by class name, so the times live in
 * static maps; one run at a time.
 */
final class Stages {
    /** The stages after the send commit, in order; the last one ends at the receive commit. */
    static final String[] NAMES = {"send_to_relay", "relay_to_ack", "ack_to_poll", "poll_to_handler",
            "handler_to_commit"};

    private static final Map<String, Long> published = new ConcurrentHashMap<>();
    /** The broker's acknowledgement names no key: by "topic-partition@offset" until the poll finds the key. */
    private static final Map<String, Long> ackedAt = new ConcurrentHashMap<>();
    private static final Map<String, Long> acked = new ConcurrentHashMap<>();
    private static final Map<String, Long> polled = new ConcurrentHashMap<>();
    private static final Map<String, Long> handling = new ConcurrentHashMap<>();
    /** The pipelines split into stages: txbox's, then the bare one. */
    static final int TXBOX = 0;
    static final int BARE = 1;
    private static final Histogram[][] histograms = new Histogram[2][NAMES.length];

    static {
        reset();
    }

    private Stages() {}

    static synchronized void reset() {
        published.clear();
        ackedAt.clear();
        acked.clear();
        polled.clear();
        handling.clear();
        for (Histogram[] pipeline : histograms) {
            for (int i = 0; i < pipeline.length; i++) {
                pipeline[i] = new Histogram(3);
            }
        }
    }

    static void handling(String key) {
        handling.putIfAbsent(key, System.nanoTime());
    }

    /**
     * Splits a message's latency into the stages of {@code pipeline} (when {@code measured}, else
     * only forgets its times); a stage with a missing time is skipped.
     */
    static void arrived(int pipeline, String key, boolean measured, long sendCommitNanos, long receiveCommitNanos) {
        long[] at = {sendCommitNanos, time(published, key), time(acked, key), time(polled, key), time(handling, key), receiveCommitNanos};
        if (!measured) {
            return;
        }
        synchronized (Stages.class) {
            for (int i = 0; i < NAMES.length; i++) {
                if (at[i] != 0 && at[i + 1] != 0) {
                    histograms[pipeline][i].recordValue(Math.max(0, (at[i + 1] - at[i]) / 1000));
                }
            }
        }
    }

    /** A copy of the histogram of {@code pipeline}'s stage {@code i} (microseconds). */
    static synchronized Histogram histogram(int pipeline, int i) {
        return histograms[pipeline][i].copy();
    }

    private static long time(Map<String, Long> times, String key) {
        Long t = times.remove(key);
        return t == null ? 0 : t;
    }

    private static void stamp(Map<String, Long> times, Iterable<Header> headers) {
        for (Header h : headers) {
            if (h.key().equals(OutboxMessage.IDEMPOTENCY_KEY_HEADER) && h.value() != null) {
                times.putIfAbsent(new String(h.value(), StandardCharsets.UTF_8), System.nanoTime());
            }
        }
    }

    /** On the relay's producer: the moment a record is handed to {@code send}. */
    public static final class Published implements ProducerInterceptor<byte[], byte[]> {
        @Override
        public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
            stamp(published, record.headers());
            return record;
        }

        @Override
        public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
            if (exception == null && metadata != null && metadata.hasOffset()) {
                ackedAt.put(metadata.topic() + "-" + metadata.partition() + "@" + metadata.offset(), System.nanoTime());
            }
        }

        @Override
        public void close() {}

        @Override
        public void configure(Map<String, ?> configs) {}
    }

    /** On the receivers' consumers: the moment a poll returns a record. */
    public static final class Polled implements ConsumerInterceptor<byte[], byte[]> {
        @Override
        public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
            for (ConsumerRecord<byte[], byte[]> r : records) {
                stamp(polled, r.headers());
                Long ack = ackedAt.remove(r.topic() + "-" + r.partition() + "@" + r.offset());
                Header key = r.headers().lastHeader(OutboxMessage.IDEMPOTENCY_KEY_HEADER);
                if (ack != null && key != null && key.value() != null) {
                    acked.putIfAbsent(new String(key.value(), StandardCharsets.UTF_8), ack);
                }
            }
            return records;
        }

        @Override
        public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {}

        @Override
        public void close() {}

        @Override
        public void configure(Map<String, ?> configs) {}
    }
}
