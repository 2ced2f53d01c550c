package io.txbox.relay.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/** The end of a batch on the plain idempotent producer: a flush only when records may linger. */
class ProducerPublisherTest {
    final MockProducer<byte[], byte[]> mock = new MockProducer<>(false, null, new ByteArraySerializer(), new ByteArraySerializer());

    ProducerPublisher publisher(String lingerMs) {
        return new ProducerPublisher(mock, false, "test", null,
                ProducerPublisher.lingers(Map.of(ProducerConfig.LINGER_MS_CONFIG, lingerMs)));
    }

    @Test
    void endOfBatch_noLinger_waitsForNoOtherRecord() {
        ProducerPublisher p = publisher("0");
        CompletableFuture<Void> sent = p.publish("t", LaneTransactionsTest.row("k")).toCompletableFuture();

        p.endOfBatch();

        // nothing was flushed: the batch waits for its own acknowledgements only
        assertThat(sent).isNotDone();
        mock.completeNext();
        assertThat(sent).isCompleted();
    }

    @Test
    void endOfBatch_linger_flushesWhatWaits() {
        ProducerPublisher p = publisher("5");
        CompletableFuture<Void> sent = p.publish("t", LaneTransactionsTest.row("k")).toCompletableFuture();

        p.endOfBatch();

        assertThat(sent).isCompleted();
    }

    @Test
    void lingers_unparsableValue_countsAsLingering() {
        assertThat(ProducerPublisher.lingers(Map.of(ProducerConfig.LINGER_MS_CONFIG, "soon"))).isTrue();
        assertThat(ProducerPublisher.lingers(Map.of(ProducerConfig.LINGER_MS_CONFIG, 0))).isFalse();
    }
}
