package io.txbox.inbox.kafka;

import io.txbox.inbox.consumer.DeadLetterHeaders;
import io.txbox.inbox.consumer.internal.ConsumerRunner;
import io.txbox.inbox.consumer.internal.Decision;
import io.txbox.inbox.consumer.internal.Delivery;
import io.txbox.inbox.consumer.internal.DeliveryProcessor;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The poll loop. All Kafka calls happen on its one thread (KafkaConsumer is not thread-safe);
 * other threads only flip {@link #stopping}.
 */
final class KafkaRunner extends ConsumerRunner implements KafkaInboxConsumer {
    private static final Logger log = LoggerFactory.getLogger(KafkaRunner.class);
    private static final Duration DEAD_LETTER_SEND_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(10);

    private final List<String> topics;
    private final @Nullable String deadLetterTopic;
    private final Duration pollTimeout;
    private final Map<String, Object> consumerConfig;
    private final Map<String, Object> producerConfig;

    private final Object lifecycle = new Object();
    private @Nullable Thread thread;
    private volatile boolean started;
    private volatile boolean stopping;
    // Set when close() gave up waiting: the loop must then leave without committing.
    private volatile boolean abandoned;

    // Poll-thread state.
    // Offsets of records whose transaction ended, not yet sent to the broker.
    private final Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();
    // The latest offset sent per partition by commitAsync and not yet confirmed: committed again,
    // synchronously, when the partition is revoked and on close, and sent again after a failure.
    private final Map<TopicPartition, OffsetAndMetadata> unconfirmed = new HashMap<>();
    private boolean resendUnconfirmed;
    private final Map<TopicPartition, Instant> pausedUntil = new HashMap<>();
    // Partitions taken away while a batch was being processed: the rest of their batch is
    // skipped, because their new owner (or this consumer, if they come back) starts again at
    // the offset committed on revocation.
    private final Set<TopicPartition> revokedInBatch = new HashSet<>();
    private long lastPollNanos;


    KafkaRunner(DeliveryProcessor processor, List<String> topics, @Nullable String deadLetterTopic,
            Duration pollTimeout, Map<String, Object> consumerConfig, Map<String, Object> producerConfig) {
        super(processor);
        this.topics = topics;
        this.deadLetterTopic = deadLetterTopic;
        this.pollTimeout = pollTimeout;
        this.consumerConfig = Map.copyOf(consumerConfig);
        this.producerConfig = Map.copyOf(producerConfig);
    }

    @Override
    public void start() {
        synchronized (lifecycle) {
            if (started) {
                throw alreadyStarted();
            }
            started = true;
            running = true;
            Thread t = new Thread(this::run, "txbox-kafka-" + consumer());
            thread = t;
            t.start();
            startParked();
        }
    }

    @Override
    public void close() {
        Thread t;
        synchronized (lifecycle) {
            started = true;
            stopping = true;
            t = thread;
        }
        stopParked();
        if (t == null || t == Thread.currentThread()) {
            return;
        }
        try {
            t.join(processor.shutdownTimeout().plus(pollTimeout).toMillis() + 1);
            if (t.isAlive()) {
                abandoned = true;
                log.warn("{} - still processing after the shutdown timeout {}; its record is left uncommitted "
                        + "and will be redelivered", consumer(), processor.shutdownTimeout());
                t.join(CLOSE_TIMEOUT.toMillis());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        log.info("{} - starting on topics {}", consumer(), topics);
        KafkaConsumer<byte[], byte[]> consumer = null;
        KafkaProducer<byte[], byte[]> producer = null;
        boolean graceful = false;
        try {
            consumer = new KafkaConsumer<>(consumerConfig);
            producer = new KafkaProducer<>(producerConfig);
            consumer.subscribe(topics, new Rebalance(consumer));
            loop(consumer, producer);
            graceful = !abandoned;
        } catch (RuntimeException | Error e) {
            log.error("{} - consumer failed and stops; uncommitted records will be redelivered", consumer(), e);
            listener.onError(consumer(), e);
        } finally {
            if (consumer != null) {
                if (graceful) {
                    commitBeforeLeaving(consumer);
                }
                closeQuietly(consumer);
            }
            if (producer != null) {
                producer.close(CLOSE_TIMEOUT);
            }
            running = false;
            log.info("{} - stopped", consumer());
        }
    }

    private void loop(KafkaConsumer<byte[], byte[]> consumer, KafkaProducer<byte[], byte[]> producer) {
        while (!stopping) {
            resumeDue(consumer);
            ConsumerRecords<byte[], byte[]> records = consumer.poll(nextPollTimeout());
            // After the poll: a partition revoked and given back inside this poll is ours again,
            // and the records it just returned must be processed.
            revokedInBatch.clear();
            lastPollNanos = System.nanoTime();
            partitions:
            for (TopicPartition tp : records.partitions()) {
                if (pausedUntil.containsKey(tp)) {
                    continue; // paused while this batch was fetched; the seek brings the records back
                }
                List<ConsumerRecord<byte[], byte[]>> list = records.records(tp);
                // Chained, one call runs the partition's records up to a retry, a dead letter or a stop.
                boolean chained = processor.chains();
                for (int from = 0; from < list.size(); ) {
                    if (stopping || abandoned) {
                        break partitions; // the rest stays uncommitted and is redelivered
                    }
                    if (!stillOurs(consumer, tp)) {
                        break; // no longer ours: the new owner starts at the committed offset
                    }
                    List<ConsumerRecord<byte[], byte[]>> batch = list.subList(from,
                            chained ? list.size() : Math.min(list.size(), from + processor.batchSize()));
                    from += handle(consumer, producer, tp, batch, chained);
                    if (pausedUntil.containsKey(tp)) {
                        break; // a retry is due later; the seek brings the rest back
                    }
                }
            }
            if (!abandoned) {
                commitAsync(consumer);
            }
        }
    }

    /**
     * Runs a batch of one partition's records (one record unless batching or chained); returns
     * how many are done: fewer than the batch when the partition was paused for a retry, was
     * revoked, or the chain stopped early.
     */
    private int handle(KafkaConsumer<byte[], byte[]> consumer, KafkaProducer<byte[], byte[]> producer,
            TopicPartition tp, List<ConsumerRecord<byte[], byte[]>> batch, boolean chained) {
        List<Delivery> deliveries = new ArrayList<>(batch.size());
        for (ConsumerRecord<byte[], byte[]> record : batch) {
            deliveries.add(toDelivery(record));
        }
        List<Decision> decisions = chained
                ? processor.processChained(deliveries, () -> !stopping && !abandoned && stillOurs(consumer, tp))
                : processor.processBatch(deliveries);
        for (int i = 0; i < decisions.size(); i++) {
            // A chain may have seen the partition revoked: its new owner redelivers, the inbox dedups.
            if (revokedInBatch.contains(tp)
                    || !apply(consumer, producer, tp, batch.get(i), deliveries.get(i), decisions.get(i))) {
                return i;
            }
        }
        return decisions.size();
    }

    /** Lets a pending rebalance go ahead; whether {@code tp} is still this consumer's. */
    private boolean stillOurs(KafkaConsumer<byte[], byte[]> consumer, TopicPartition tp) {
        takePartInRebalance(consumer);
        return !revokedInBatch.contains(tp);
    }

    /** Carries out one record's decision; {@code false} when its partition was paused for a retry. */
    private boolean apply(KafkaConsumer<byte[], byte[]> consumer, KafkaProducer<byte[], byte[]> producer,
            TopicPartition tp, ConsumerRecord<byte[], byte[]> record, Delivery delivery, Decision decision) {
        if (decision instanceof Decision.Retry retry) {
            retryLater(consumer, tp, record.offset(), retry.delay());
            return false;
        }
        if (decision instanceof Decision.DeadLetter dead) {
            try {
                processor.deadLettered(delivery, deadLetter(producer, record, dead.reason()), dead.reason());
            } catch (RuntimeException e) {
                retryLater(consumer, tp, record.offset(), processor.deadLetterFailed(delivery, e));
                return false;
            }
        }
        pending.put(tp, new OffsetAndMetadata(record.offset() + 1));
        return true;
    }

    /** Produces the dead letter and waits for the broker's acknowledgement; returns the topic. */
    private String deadLetter(KafkaProducer<byte[], byte[]> producer, ConsumerRecord<byte[], byte[]> record,
            String reason) {
        String topic = deadLetterTopic != null ? deadLetterTopic
                : record.topic() + KafkaInboxConsumer.DEFAULT_DEAD_LETTER_SUFFIX;
        RecordHeaders headers = new RecordHeaders(record.headers().toArray());
        headers.add(DeadLetterHeaders.REASON, utf8(reason));
        headers.add(DeadLetterHeaders.CONSUMER, utf8(consumer()));
        headers.add(DeadLetterHeaders.ORIGINAL_TOPIC, utf8(record.topic()));
        headers.add(DeadLetterHeaders.ORIGINAL_PARTITION, utf8(Integer.toString(record.partition())));
        headers.add(DeadLetterHeaders.ORIGINAL_OFFSET, utf8(Long.toString(record.offset())));
        try {
            send(producer, new ProducerRecord<>(topic, null, record.key(), record.value(), headers));
        } catch (RecordTooLargeException e) {
            // Retrying the same record can never succeed and would wedge the partition: keep the
            // reason and coordinates, drop the payload, and say so.
            int size = record.value() == null ? 0 : record.value().length;
            headers.add(DeadLetterHeaders.PAYLOAD_OMITTED, utf8(Integer.toString(size)));
            send(producer, new ProducerRecord<>(topic, null, record.key(), null, headers));
            log.warn("{} - {}: payload of {} bytes too large for {}; dead letter carries headers and reason only",
                    consumer(), coordinates(record), size, topic);
        }
        return topic;
    }

    /** Synchronous: the offset may only be committed once the dead letter is safely stored. */
    private static void send(KafkaProducer<byte[], byte[]> producer, ProducerRecord<byte[], byte[]> out) {
        try {
            producer.send(out).get(DEAD_LETTER_SEND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaException("interrupted while producing the dead letter", e);
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof RecordTooLargeException tooLarge) {
                throw tooLarge;
            }
            throw new KafkaException("dead letter to " + out.topic() + " not acknowledged: " + e.getCause(), e);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new KafkaException("dead letter to " + out.topic() + " not acknowledged within "
                    + DEAD_LETTER_SEND_TIMEOUT, e);
        }
    }

    private void retryLater(KafkaConsumer<byte[], byte[]> consumer, TopicPartition tp, long offset, Duration delay) {
        // Seek back so the failed record is the next one fetched, and pause only this partition:
        // poll() keeps running (group membership, other partitions) until the backoff is over.
        consumer.seek(tp, offset);
        consumer.pause(List.of(tp));
        pausedUntil.put(tp, processor.clock().instant().plus(delay));
    }

    private void resumeDue(KafkaConsumer<byte[], byte[]> consumer) {
        if (pausedUntil.isEmpty()) {
            return;
        }
        Instant now = processor.clock().instant();
        for (Iterator<Map.Entry<TopicPartition, Instant>> it = pausedUntil.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<TopicPartition, Instant> e = it.next();
            if (!e.getValue().isAfter(now)) {
                it.remove();
                if (consumer.assignment().contains(e.getKey())) {
                    consumer.resume(List.of(e.getKey()));
                }
            }
        }
    }

    /**
     * Lets a pending rebalance go ahead between two records of a batch, at most once per poll
     * timeout. Without this, a rebalance waits until the whole batch is processed (up to
     * {@code max.poll.records} handler runs), and under the eager protocol the whole group
     * stands still meanwhile. Every partition is paused around a zero-timeout poll, so the poll
     * runs the group protocol (rejoin, revocation and assignment callbacks) but fetches nothing.
     */
    private void takePartInRebalance(KafkaConsumer<byte[], byte[]> consumer) {
        if (System.nanoTime() - lastPollNanos < pollTimeout.toNanos()) {
            return;
        }
        Set<TopicPartition> unpaused = new HashSet<>(consumer.assignment());
        unpaused.removeAll(consumer.paused());
        consumer.pause(unpaused);
        ConsumerRecords<byte[], byte[]> early;
        try {
            early = consumer.poll(Duration.ZERO);
        } finally {
            unpaused.retainAll(consumer.assignment());
            consumer.resume(unpaused);
        }
        lastPollNanos = System.nanoTime();
        // Partitions assigned by this poll were not paused: hand their records back.
        for (TopicPartition tp : early.partitions()) {
            consumer.seek(tp, early.records(tp).get(0).offset());
        }
    }

    private Duration nextPollTimeout() {
        Duration timeout = pollTimeout;
        Instant now = processor.clock().instant();
        for (Instant due : pausedUntil.values()) {
            Duration until = Duration.between(now, due);
            if (until.compareTo(timeout) < 0) {
                timeout = until.isNegative() ? Duration.ZERO : until;
            }
        }
        return timeout;
    }

    /**
     * Sends the offsets of the records done since the last commit without waiting for the broker,
     * so the loop is back in {@code poll} while the commit travels: a record that arrives
     * meanwhile is not held up by it. A lost commit only means redelivery, which the inbox
     * absorbs; revocation and close commit synchronously ({@link #commitSync}).
     */
    private void commitAsync(KafkaConsumer<byte[], byte[]> consumer) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        if (resendUnconfirmed) {
            // the latest offsets sent, so a resend never moves a committed offset back
            offsets.putAll(unconfirmed);
            resendUnconfirmed = false;
        }
        offsets.putAll(pending);
        pending.clear();
        if (offsets.isEmpty()) {
            return;
        }
        unconfirmed.putAll(offsets);
        consumer.commitAsync(offsets, (done, error) -> confirmed(offsets, error));
    }

    /** The broker's answer to a {@link #commitAsync}; on the poll thread, inside a later poll or commit. */
    private void confirmed(Map<TopicPartition, OffsetAndMetadata> offsets, @Nullable Exception error) {
        if (error != null) {
            // Not fatal: sent again with the next commit; until then a crash or a new owner
            // redelivers the records, and the inbox reports them as duplicates.
            resendUnconfirmed = true;
            log.warn("{} - offset commit failed, will be sent again: {}", consumer(), error.toString());
            listener.onError(consumer(), error);
            return;
        }
        offsets.forEach(unconfirmed::remove); // only where no later offset was sent since
        listener.onAck(consumer(), offsets.size());
        log.debug("{} - committed {}", consumer(), offsets);
    }

    /**
     * Commits {@code partitions}' offsets done or sent but not confirmed, waiting for the broker:
     * their next owner, or the next run, starts after every record whose transaction ended.
     */
    private void commitSync(KafkaConsumer<byte[], byte[]> consumer, Collection<TopicPartition> partitions) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition tp : partitions) {
            OffsetAndMetadata latest = pending.containsKey(tp) ? pending.remove(tp) : unconfirmed.get(tp);
            unconfirmed.remove(tp);
            if (latest != null) {
                offsets.put(tp, latest);
            }
        }
        if (offsets.isEmpty() || abandoned) {
            return;
        }
        try {
            consumer.commitSync(offsets);
            listener.onAck(consumer(), offsets.size());
            log.debug("{} - committed {}", consumer(), offsets);
        } catch (KafkaException e) {
            // Not fatal: the records are redelivered to whoever owns the partitions, and the
            // inbox reports them as duplicates.
            log.warn("{} - offset commit failed, records will be redelivered: {}", consumer(), e.toString());
            listener.onError(consumer(), e);
        }
    }

    /** On a graceful stop: everything done is committed before the consumer leaves the group. */
    private void commitBeforeLeaving(KafkaConsumer<byte[], byte[]> consumer) {
        Set<TopicPartition> partitions = new HashSet<>(pending.keySet());
        partitions.addAll(unconfirmed.keySet());
        commitSync(consumer, partitions);
    }

    private void closeQuietly(KafkaConsumer<byte[], byte[]> consumer) {
        try {
            consumer.close(CloseOptions.timeout(CLOSE_TIMEOUT));
        } catch (RuntimeException e) {
            log.warn("{} - closing the Kafka consumer failed: {}", consumer(), e.toString());
        }
    }

    private Delivery toDelivery(ConsumerRecord<byte[], byte[]> record) {
        Map<String, String> headers = new LinkedHashMap<>();
        for (Header h : record.headers()) {
            if (h.value() != null) {
                headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8));
            }
        }
        Header keyHeader = record.headers().lastHeader(processor.keyHeader());
        byte[] key = keyHeader == null ? null : keyHeader.value() == null ? new byte[0] : keyHeader.value();
        String transportKey = record.topic() + "-" + record.partition() + "-" + record.offset();
        return new Delivery(coordinates(record), transportKey, key, record.value(), headers, false, record.key());
    }

    private static String coordinates(ConsumerRecord<?, ?> record) {
        return record.topic() + "-" + record.partition() + "@" + record.offset();
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Commits what is done for partitions that are taken away, and forgets their retry state. */
    private final class Rebalance implements ConsumerRebalanceListener {
        private final KafkaConsumer<byte[], byte[]> consumer;

        Rebalance(KafkaConsumer<byte[], byte[]> consumer) {
            this.consumer = consumer;
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            for (TopicPartition tp : partitions) {
                pausedUntil.remove(tp);
            }
            revokedInBatch.addAll(partitions);
            commitSync(consumer, partitions);
            log.info("{} - partitions revoked: {}", consumer(), partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            // Someone else may own them already: committing now could move their offsets.
            for (TopicPartition tp : partitions) {
                pending.remove(tp);
                unconfirmed.remove(tp);
                pausedUntil.remove(tp);
            }
            revokedInBatch.addAll(partitions);
            log.warn("{} - partitions lost: {}", consumer(), partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            log.info("{} - partitions assigned: {}", consumer(), partitions);
        }
    }
}
