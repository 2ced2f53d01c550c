package io.txbox.relay.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.outbox.Lanes;
import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/** Strict fencing's per-lane transactions, on MockProducer: commit, fence, broken commit. */
class LaneTransactionsTest {
    final Map<String, List<MockProducer<byte[], byte[]>>> byId = new HashMap<>();

    LaneTransactions lanes() {
        return new LaneTransactions("orders", Map.of(ProducerConfig.CLIENT_ID_CONFIG, "c"), config -> {
            MockProducer<byte[], byte[]> p = new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
            byId.computeIfAbsent((String) config.get(ProducerConfig.TRANSACTIONAL_ID_CONFIG), k -> new ArrayList<>()).add(p);
            return p;
        });
    }

    static PublishRecord row(String routingKey) {
        return new PublishRecord(1, routingKey + ":s", routingKey, "d", routingKey, new byte[] {1}, Map.of(), null, null, null, 0,
                Instant.EPOCH);
    }

    static CompletableFuture<Void> publish(LaneTransactions lanes, PublishRecord r) {
        return lanes.publish(new ProducerRecord<>("t", r.payload()), r, "t");
    }

    MockProducer<byte[], byte[]> producerOf(String routingKey) {
        List<MockProducer<byte[], byte[]>> all = byId.get("orders-lane-" + Lanes.of(routingKey, routingKey + ":s"));
        return all.get(all.size() - 1);
    }

    @Test
    void batch_recordsConfirmOnlyWhenTheirLaneTransactionCommits() {
        try (LaneTransactions lanes = lanes()) {
            CompletableFuture<Void> a = publish(lanes, row("a"));
            CompletableFuture<Void> b = publish(lanes, row("b"));
            assertThat(a).isNotDone();
            assertThat(producerOf("a").transactionInFlight()).isTrue();

            lanes.endOfBatch();

            assertThat(a).isCompleted();
            assertThat(b).isCompleted();
            assertThat(producerOf("a").transactionCommitted()).isTrue();
            assertThat(byId).containsKey("orders-lane-" + Lanes.of("a", "a:s"));
        }
    }

    @Test
    void fencedLane_recordsFailRetryable_andTheNextBatchStartsANewProducer() throws Exception {
        try (LaneTransactions lanes = lanes()) {
            publish(lanes, row("a"));
            lanes.endOfBatch();
            MockProducer<byte[], byte[]> first = producerOf("a");

            CompletableFuture<Void> stale = publish(lanes, row("a"));
            first.fenceProducer(); // another relay's initTransactions for the same transactional id
            lanes.endOfBatch();

            assertThat(stale).isCompletedExceptionally();
            PublishException e = cause(stale);
            assertThat(e.retryable()).isTrue();
            assertThat(e.getMessage()).contains("orders-lane-").contains("fenced");
            assertThat(first.closed()).isTrue();

            CompletableFuture<Void> later = publish(lanes, row("a"));
            lanes.endOfBatch();
            assertThat(later).isCompleted();
            assertThat(producerOf("a")).isNotSameAs(first);
        }
    }

    @Test
    void commitTimeout_recordsFailRetryable_andTheProducerIsReplaced() throws Exception {
        try (LaneTransactions lanes = lanes()) {
            publish(lanes, row("a"));
            lanes.endOfBatch();
            MockProducer<byte[], byte[]> first = producerOf("a");
            first.commitTransactionException = new TimeoutException("EndTxn timed out");

            CompletableFuture<Void> f = publish(lanes, row("a"));
            lanes.endOfBatch();

            assertThat(cause(f).retryable()).isTrue();
            assertThat(first.closed()).isTrue();
            CompletableFuture<Void> next = publish(lanes, row("a"));
            lanes.endOfBatch();
            assertThat(next).isCompleted();
        }
    }

    static PublishException cause(CompletableFuture<Void> f) throws InterruptedException {
        try {
            f.get();
            throw new AssertionError("expected a failure");
        } catch (ExecutionException e) {
            return (PublishException) e.getCause();
        }
    }
}
