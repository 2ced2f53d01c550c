package io.txbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import com.rabbitmq.client.ShutdownSignalException;
import io.txbox.RetryableException;
import io.txbox.inbox.consumer.internal.ConsumerRunner;
import io.txbox.inbox.consumer.internal.Decision;
import io.txbox.inbox.consumer.internal.Delivery;
import io.txbox.inbox.consumer.internal.DeliveryProcessor;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deliveries arrive on the connection's consumer threads (one at a time per channel) and are
 * processed there, or, when batching or chaining commits, handed to a worker thread of their
 * channel that runs whatever has arrived. Delayed nacks run on a scheduler thread; acks and
 * nacks are single frames, which the client serializes per channel.
 */
final class RabbitRunner extends ConsumerRunner implements RabbitInboxConsumer {
    private static final Logger log = LoggerFactory.getLogger(RabbitRunner.class);
    /** How often an idle batch worker looks up from its queue. */
    private static final Duration WORKER_POLL = Duration.ofMillis(200);

    private final ConnectionFactory factory;
    private final String queue;
    private final int prefetch;
    private final int concurrency;
    // The header a parking consumer reads the ordering key from; null: the routing key.
    private final @Nullable String orderingKeyHeader;
    private final boolean declareDeadLetterTopology;
    private final RabbitDeadLetters deadLetters;

    private final Object lock = new Object();
    private boolean started;
    private volatile boolean closing;
    private int inFlight;
    private @Nullable Connection connection;
    private @Nullable ExecutorService executor;
    /** One worker per channel when batching or chaining, else {@code null}. */
    private @Nullable ExecutorService workers;
    /** Whether the workers chain commits ({@link DeliveryProcessor#processChained}); set on start. */
    private boolean chaining;
    private @Nullable ScheduledThreadPoolExecutor scheduler;
    private final List<ConsumerChannel> consumers = new ArrayList<>();

    /** Nacks scheduled and not yet sent, on any channel: while there are some, acks go one by one. */
    private final AtomicInteger pendingNacks = new AtomicInteger();


    RabbitRunner(DeliveryProcessor processor, ConnectionFactory factory, String queue, int prefetch,
            int concurrency, String deadLetterExchange, boolean declareDeadLetterTopology,
            @Nullable String orderingKeyHeader) {
        super(processor);
        this.orderingKeyHeader = orderingKeyHeader;
        this.factory = factory;
        this.queue = queue;
        this.prefetch = prefetch;
        this.concurrency = concurrency;
        this.declareDeadLetterTopology = declareDeadLetterTopology;
        this.deadLetters = new RabbitDeadLetters(processor.consumer(), queue, deadLetterExchange);
    }

    /**
     * Connects, declares the dead-letter topology and starts consuming.
     *
     * @throws RetryableException if the broker cannot be reached or refuses the setup; nothing
     *     keeps running
     */
    @Override
    public void start() {
        synchronized (lock) {
            if (started) {
                throw alreadyStarted();
            }
            started = true;
            executor = Executors.newFixedThreadPool(concurrency, threads("txbox-rabbit-" + consumer() + "-"));
            ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(1, threads("txbox-rabbit-" + consumer()
                    + "-retry-"));
            s.setRemoveOnCancelPolicy(true);
            scheduler = s;
            // Decided once: a database unreachable now leaves this consumer unchained, as on MariaDB.
            chaining = processor.chains();
            if (processor.batchSize() > 1 || chaining) {
                workers = Executors.newFixedThreadPool(concurrency, threads("txbox-rabbit-" + consumer()
                        + (chaining ? "-chain-" : "-batch-")));
            }
            try {
                Connection c = factory.newConnection(executor, "txbox-" + consumer());
                connection = c;
                c.addShutdownListener(this::onShutdown);
                if (c instanceof Recoverable r) {
                    r.addRecoveryListener(new RecoveryListener() {
                        @Override
                        public void handleRecovery(Recoverable recoverable) {
                            log.info("{} - connection to RabbitMQ recovered, consuming {} again", consumer(), queue);
                        }

                        @Override
                        public void handleRecoveryStarted(Recoverable recoverable) {
                            log.info("{} - recovering the RabbitMQ connection", consumer());
                        }
                    });
                }
                deadLetters.open(c, declareDeadLetterTopology);
                for (int i = 0; i < concurrency; i++) {
                    Channel ch = c.createChannel();
                    ch.basicQos(prefetch);
                    BlockingQueue<Received> waiting = null;
                    if (workers != null) {
                        BlockingQueue<Received> q = new LinkedBlockingQueue<>();
                        waiting = q;
                        workers.execute(() -> drain(ch, q));
                    }
                    ConsumerChannel consumer = new ConsumerChannel(ch, waiting);
                    consumer.tag = ch.basicConsume(queue, false, "txbox-" + consumer() + "-" + i, consumer);
                    consumers.add(consumer);
                }
                running = true;
                startParked();
                log.info("{} - consuming {} with {} channel(s), prefetch {}", consumer(), queue, concurrency, prefetch);
            } catch (IOException | TimeoutException | RuntimeException e) {
                shutdownResources();
                throw new RetryableException("[" + consumer() + "] could not start consuming " + queue + ": " + e, e);
            }
        }
    }

    @Override
    public void close() {
        synchronized (lock) {
            if (closing) {
                return;
            }
            closing = true;
            started = true;
            stopParked();
            if (connection == null) {
                shutdownResources();
                return;
            }
            log.info("{} - closing: stop fetching, finishing {} delivery(ies) in progress", consumer(), inFlight);
        }
        for (ConsumerChannel c : consumers) {
            try {
                if (c.tag != null && c.channel.isOpen()) {
                    c.channel.basicCancel(c.tag);
                }
            } catch (IOException | RuntimeException e) {
                log.debug("{} - cancel failed: {}", consumer(), e.toString());
            }
        }
        long deadline = System.nanoTime() + processor.shutdownTimeout().toNanos();
        synchronized (lock) {
            while (inFlight > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    log.warn("{} - {} delivery(ies) still running after {}; left unacked for redelivery", consumer(),
                            inFlight, processor.shutdownTimeout());
                    break;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(lock, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        shutdownResources();
        log.info("{} - closed", consumer());
    }

    /** Nacks waiting retries at once, then closes the connection (the broker requeues anything unacked). */
    private void shutdownResources() {
        ScheduledThreadPoolExecutor s = scheduler;
        if (s != null) {
            for (Runnable pendingNack : s.shutdownNow()) {
                pendingNack.run();
            }
        }
        ExecutorService w = workers;
        if (w != null) {
            w.shutdownNow();
        }
        Connection c = connection;
        if (c != null && c.isOpen()) {
            try {
                c.close(5_000);
            } catch (IOException | RuntimeException e) {
                log.debug("{} - close failed: {}", consumer(), e.toString());
            }
        }
        ExecutorService e = executor;
        if (e != null) {
            e.shutdown();
        }
        running = false;
    }

    private void onShutdown(ShutdownSignalException cause) {
        if (cause.isInitiatedByApplication()) {
            return;
        }
        // Automatic recovery takes over; the broker requeues whatever this connection held.
        log.warn("{} - lost the RabbitMQ connection, recovering: {}", consumer(), cause.getMessage());
        listener.onError(consumer(), cause);
    }

    private void handle(ConsumerChannel consumer, Received received) {
        synchronized (lock) {
            if (closing) {
                // Arrived after close began: give it back untouched.
                nack(consumer.channel, received.tag(), "queue " + queue + " #" + received.tag());
                return;
            }
            inFlight++;
        }
        BlockingQueue<Received> waiting = consumer.waiting;
        if (waiting == null) {
            run(consumer.channel, List.of(received));
        } else {
            waiting.add(received); // the channel's worker takes it from here
        }
    }

    /**
     * A channel's worker: takes what its channel has delivered without waiting for more, up to
     * the batch size (a batch) or the prefetch (a chain, which is all the broker lets the
     * channel hold), and runs it.
     */
    private void drain(Channel channel, BlockingQueue<Received> waiting) {
        int bound = chaining ? prefetch : processor.batchSize();
        List<Received> batch = new ArrayList<>(bound);
        try {
            while (!Thread.currentThread().isInterrupted()) {
                Received first = waiting.poll(WORKER_POLL.toMillis(), TimeUnit.MILLISECONDS);
                if (first == null) {
                    continue;
                }
                batch.add(first);
                waiting.drainTo(batch, bound - 1);
                run(channel, batch);
                batch.clear();
            }
        } catch (InterruptedException e) {
            // Shutting down: whatever is still waiting is unacked and the broker requeues it.
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Runs deliveries of one channel and acks, nacks or dead-letters each after its commit.
     * Chained, the deliveries after a retry or a dead letter run in a new chain; closing stops
     * the chain, and the deliveries it did not reach are given back untouched.
     */
    private void run(Channel channel, List<Received> received) {
        int done = 0;
        try {
            while (done < received.size()) {
                List<Received> rest = received.subList(done, received.size());
                if (chaining && closing) {
                    for (Received r : rest) {
                        nack(channel, r.tag(), "queue " + queue + " #" + r.tag());
                    }
                    break;
                }
                List<Delivery> deliveries = new ArrayList<>(rest.size());
                for (Received r : rest) {
                    deliveries.add(toDelivery(r));
                }
                List<Decision> decisions = chaining ? processor.processChained(deliveries, () -> !closing)
                        : processor.processBatch(deliveries);
                List<Received> acks = new ArrayList<>(decisions.size());
                for (int i = 0; i < decisions.size(); i++) {
                    if (chaining && decisions.get(i) instanceof Decision.Ack) {
                        acks.add(rest.get(i));
                        continue;
                    }
                    ackAll(channel, acks);
                    acks.clear();
                    apply(channel, rest.get(i), deliveries.get(i), decisions.get(i));
                }
                ackAll(channel, acks);
                done += decisions.size();
            }
        } finally {
            synchronized (lock) {
                inFlight -= received.size();
                lock.notifyAll();
            }
        }
    }

    private void apply(Channel channel, Received r, Delivery delivery, Decision decision) {
        if (decision instanceof Decision.Ack) {
            ack(channel, r.tag(), delivery.coordinates());
        } else if (decision instanceof Decision.Retry retry) {
            nackLater(channel, r.tag(), delivery.coordinates(), retry.delay());
        } else if (decision instanceof Decision.DeadLetter dead) {
            try {
                deadLetters.publish(r.envelope(), r.props(), r.body(), dead.reason());
            } catch (IOException | TimeoutException | InterruptedException | RuntimeException e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                nackLater(channel, r.tag(), delivery.coordinates(), processor.deadLetterFailed(delivery, e));
                return;
            }
            processor.deadLettered(delivery, deadLetters.destination(), dead.reason());
            ack(channel, r.tag(), delivery.coordinates());
        }
    }

    /**
     * Acks {@code acks} (consecutive deliveries, every earlier one on the channel decided) with
     * one multiple ack, unless a delayed nack is pending: that one must not be acked with them.
     */
    private void ackAll(Channel channel, List<Received> acks) {
        if (acks.isEmpty()) {
            return;
        }
        if (pendingNacks.get() > 0) {
            for (Received r : acks) {
                ack(channel, r.tag(), "queue " + queue + " #" + r.tag());
            }
            return;
        }
        long last = acks.get(acks.size() - 1).tag();
        try {
            channel.basicAck(last, true);
            listener.onAck(consumer(), acks.size());
        } catch (IOException | RuntimeException e) {
            log.warn("{} - queue {} up to #{}: ack failed, the messages will be redelivered: {}", consumer(), queue,
                    last, e.toString());
            listener.onError(consumer(), e);
        }
    }

    private void ack(Channel channel, long tag, String coordinates) {
        try {
            channel.basicAck(tag, false);
            listener.onAck(consumer(), 1);
        } catch (IOException | RuntimeException e) {
            // The channel died after the commit: the broker redelivers and the inbox reports a duplicate.
            log.warn("{} - {}: ack failed, the message will be redelivered: {}", consumer(), coordinates, e.toString());
            listener.onError(consumer(), e);
        }
    }

    private void nackLater(Channel channel, long tag, String coordinates, Duration delay) {
        ScheduledThreadPoolExecutor s = scheduler;
        pendingNacks.incrementAndGet();
        try {
            if (s == null) {
                throw new IllegalStateException("not started");
            }
            s.schedule(() -> {
                try {
                    nack(channel, tag, coordinates);
                } finally {
                    pendingNacks.decrementAndGet();
                }
            }, delay.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RuntimeException e) {
            pendingNacks.decrementAndGet();
            nack(channel, tag, coordinates); // shutting down: requeue now
        }
    }

    private void nack(Channel channel, long tag, String coordinates) {
        try {
            if (channel.isOpen()) {
                channel.basicNack(tag, false, true);
            }
        } catch (IOException | RuntimeException e) {
            // The broker requeues it anyway when the channel closes.
            log.debug("{} - {}: nack failed: {}", consumer(), coordinates, e.toString());
        }
    }

    private Delivery toDelivery(Received r) {
        Map<String, String> headers = new LinkedHashMap<>();
        byte[] key = null;
        if (r.props().getHeaders() != null) {
            for (Map.Entry<String, Object> h : r.props().getHeaders().entrySet()) {
                byte[] value = bytes(h.getValue());
                if (value == null) {
                    continue;
                }
                headers.put(h.getKey(), new String(value, StandardCharsets.UTF_8));
                if (h.getKey().equals(processor.keyHeader())) {
                    key = value;
                }
            }
        }
        String coordinates = "queue " + queue + " #" + r.tag();
        String ordering = orderingKeyHeader == null ? r.envelope().getRoutingKey() : headers.get(orderingKeyHeader);
        return new Delivery(coordinates, null, key, r.body(), headers, r.envelope().isRedeliver(),
                ordering == null || ordering.isEmpty() ? null : ordering.getBytes(StandardCharsets.UTF_8));
    }

    /** A header value as bytes; tables and arrays have no text form and are left out. */
    private static byte @Nullable [] bytes(@Nullable Object value) {
        if (value instanceof LongString s) {
            return s.getBytes();
        }
        if (value instanceof byte[] b) {
            return b;
        }
        if (value instanceof String || value instanceof Number || value instanceof Boolean) {
            return value.toString().getBytes(StandardCharsets.UTF_8);
        }
        return null;
    }

    private static ThreadFactory threads(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(false);
            return t;
        };
    }

    /** One delivery as the client handed it over. */
    private record Received(long tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {}

    /** One consuming channel. */
    private final class ConsumerChannel extends DefaultConsumer {
        final Channel channel;
        volatile @Nullable String tag;
        /** Deliveries waiting for the channel's worker; {@code null} unless batching or chaining. */
        final @Nullable BlockingQueue<Received> waiting;

        ConsumerChannel(Channel channel, @Nullable BlockingQueue<Received> waiting) {
            super(channel);
            this.channel = channel;
            this.waiting = waiting;
        }

        @Override
        public void handleDelivery(String consumerTag, Envelope envelope, AMQP.BasicProperties properties,
                byte[] body) {
            handle(this, new Received(envelope.getDeliveryTag(), envelope, properties, body));
        }

        @Override
        public void handleCancel(String consumerTag) {
            // The broker cancelled us (queue deleted): nothing recovers that.
            log.error("{} - the broker cancelled the consumer of {} (queue deleted?)", consumer(), queue);
            running = false;
        }
    }
}
