package io.txbox.relay.kafka;

import io.txbox.outbox.Lanes;
import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Strict fencing: one transactional producer per lane, with {@code transactional.id} {@code
 * <prefix>-lane-<n>}, and the rows of each lane in a batch sent in one Kafka transaction. A relay
 * that takes a lane over creates that lane's producer, and its {@code initTransactions()} bumps
 * the producer epoch: the broker aborts the previous owner's open transaction and refuses its
 * commits and sends from then on, so a relay that lost its lane (frozen, partitioned) publishes
 * nothing a {@code read_committed} consumer sees.
 *
 * <p>Threads: each relay worker publishes its own lanes and commits them in {@link
 * #endOfBatch()}; the lanes a worker opened are kept per thread.
 */
final class LaneTransactions implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LaneTransactions.class);

    private final String prefix;
    private final Map<String, Object> baseConfig;
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> factory;
    private final Map<Short, Producer<byte[], byte[]>> producers = new ConcurrentHashMap<>();
    private final ThreadLocal<Map<Short, Open>> open = ThreadLocal.withInitial(HashMap::new);
    /** Commits the lanes of a batch in parallel: each commit is a round trip to the transaction coordinator. */
    private final ExecutorService committer;

    /** A lane's transaction in the current batch of one worker. */
    private static final class Open {
        final Producer<byte[], byte[]> producer;
        final List<CompletableFuture<Void>> pending = new ArrayList<>();
        volatile boolean failed;

        Open(Producer<byte[], byte[]> producer) {
            this.producer = producer;
        }
    }

    LaneTransactions(String prefix, Map<String, Object> baseConfig,
            Function<Map<String, Object>, Producer<byte[], byte[]>> factory) {
        this.prefix = prefix;
        this.baseConfig = Map.copyOf(baseConfig);
        this.factory = factory;
        this.committer = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "txbox-kafka-commit-" + prefix);
            t.setDaemon(true);
            return t;
        });
    }

    static Producer<byte[], byte[]> kafkaProducer(Map<String, Object> config) {
        return new KafkaProducer<>(config);
    }

    String transactionalId(short lane) {
        return prefix + "-lane-" + lane;
    }

    CompletableFuture<Void> publish(ProducerRecord<byte[], byte[]> record, PublishRecord row, String target) {
        short lane = Lanes.of(row.routingKey(), row.stepKey());
        Map<Short, Open> mine = open.get();
        Open o = mine.get(lane);
        if (o == null) {
            Producer<byte[], byte[]> p;
            try {
                p = producer(lane);
                p.beginTransaction();
            } catch (RuntimeException e) {
                discard(lane);
                return CompletableFuture.failedFuture(PublishException.retryable("cannot start the Kafka transaction "
                        + transactionalId(lane) + ": " + e, e));
            }
            o = new Open(p);
            mine.put(lane, o);
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        o.pending.add(done);
        Open current = o;
        try {
            // success is only known at commit; a failed send fails its record (and the lane's transaction) now
            o.producer.send(record, (metadata, e) -> {
                if (e != null) {
                    current.failed = true;
                    done.completeExceptionally(ProducerPublisher.translate(target, e));
                }
            });
        } catch (RuntimeException e) {
            o.failed = true;
            done.completeExceptionally(ProducerPublisher.translate(target, e));
        }
        return done;
    }

    /** Commits every lane this thread opened in its batch, in parallel, and completes their records. */
    void endOfBatch() {
        Map<Short, Open> mine = open.get();
        if (mine.isEmpty()) {
            return;
        }
        List<CompletableFuture<Void>> commits = new ArrayList<>(mine.size());
        mine.forEach((lane, o) -> commits.add(CompletableFuture.runAsync(() -> finish(lane, o), committer)));
        mine.clear();
        CompletableFuture.allOf(commits.toArray(CompletableFuture[]::new)).handle((v, e) -> null).join();
    }

    private void finish(short lane, Open o) {
        String id = transactionalId(lane);
        try {
            if (o.failed) {
                failAll(o, PublishException.retryable("Kafka transaction " + id
                        + " aborted: another record of its lane failed in the same batch", null));
                o.producer.abortTransaction();
                return;
            }
            o.producer.commitTransaction();
            o.pending.forEach(f -> f.complete(null));
        } catch (ProducerFencedException | InvalidProducerEpochException e) {
            log.warn("Kafka transaction {} was fenced: another relay took the lane over; its records of this batch are"
                    + " not published", id);
            failAll(o, PublishException.retryable("Kafka transaction " + id + " fenced: the lane was taken over by"
                    + " another relay (" + e.getClass().getSimpleName() + ")", e));
            discard(lane);
        } catch (RuntimeException e) {
            // a commit that timed out may still complete; either way the rows are retried (at least once).
            // A new producer's initTransactions settles the open transaction before the lane's next batch.
            failAll(o, PublishException.retryable("Kafka transaction " + id + " failed: " + e, e));
            discard(lane);
        }
    }

    private static void failAll(Open o, PublishException e) {
        o.pending.forEach(f -> f.completeExceptionally(e));
    }

    /** The lane's producer; a new one fences every earlier producer with the same transactional id. */
    private Producer<byte[], byte[]> producer(short lane) {
        Producer<byte[], byte[]> p = producers.get(lane);
        if (p != null) {
            return p;
        }
        Map<String, Object> config = new HashMap<>(baseConfig);
        config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId(lane));
        config.put(ProducerConfig.CLIENT_ID_CONFIG, baseConfig.get(ProducerConfig.CLIENT_ID_CONFIG) + "-lane-" + lane);
        p = factory.apply(config);
        try {
            p.initTransactions();
        } catch (RuntimeException e) {
            closeQuietly(p);
            throw e;
        }
        producers.put(lane, p);
        return p;
    }

    /** Drops a lane's producer after it was fenced or broke; the next batch of the lane starts a new one. */
    private void discard(short lane) {
        @Nullable Producer<byte[], byte[]> p = producers.remove(lane);
        if (p != null) {
            closeQuietly(p);
        }
    }

    private static void closeQuietly(Producer<byte[], byte[]> p) {
        try {
            p.close(Duration.ZERO);
        } catch (RuntimeException e) {
            log.debug("closing a Kafka producer failed: {}", e.toString());
        }
    }

    /** Number of lane producers open now. */
    int producerCount() {
        return producers.size();
    }

    @Override
    public void close() {
        committer.shutdownNow();
        for (Producer<byte[], byte[]> p : producers.values()) {
            try {
                p.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                log.warn("closing the Kafka producer failed: {}", e.toString());
            }
        }
        producers.clear();
    }
}
