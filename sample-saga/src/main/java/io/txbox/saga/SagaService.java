package io.txbox.saga;

import io.txbox.inbox.Inbox;
import io.txbox.inbox.InboxListener;
import io.txbox.outbox.Outbox;
import io.txbox.relay.Relay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every service of the saga has: its own schema and pool, its own outbox, its own relay
 * and its own consumers, and the means for the chaos monkey to restart the last two.
 */
public abstract class SagaService implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(SagaService.class);

    protected final String name;
    protected final ServiceDb db;
    protected final Outbox outbox;
    protected final Brokers brokers;
    private final DeliveryLog deliveries;
    private final AtomicInteger generation = new AtomicInteger();
    private Relay relay;
    private List<AutoCloseable> consumers = List.of();
    private boolean closed;

    protected SagaService(String name, ServiceDb db, Brokers brokers) {
        this.name = name;
        this.db = db;
        this.brokers = brokers;
        this.outbox = Outbox.builder().tables(db.tables()).build();
        this.deliveries = new DeliveryLog(brokers.settings(), db.schema());
    }

    /** The inbox builder every consumer of this service starts from: its tables, its delivery log. */
    protected final Inbox.Builder inbox(String consumer) {
        return Inbox.builder(consumer).tables(db.tables()).listener(deliveries);
    }

    /** Hears every inbox outcome of this service and writes it to its {@code deliveries} table. */
    protected final InboxListener deliveryListener() {
        return deliveries;
    }

    /** Adds this service's destinations to its relay. */
    protected abstract void routes(Relay.Builder relay);

    /** Starts this service's broker consumers; each is closed on restart and on close. */
    protected abstract List<AutoCloseable> startConsumers();

    public synchronized void start() {
        relay = buildRelay();
        relay.start();
        consumers = startConsumers();
    }

    /** Closes the relay and builds a new one, as a deployment or a crash-and-restart would. */
    public synchronized void restartRelay() {
        if (closed) {
            return;
        }
        log.info("[{}] chaos: restarting the relay", name);
        relay.close();
        relay = buildRelay();
        relay.start();
    }

    /** Closes the consumers and starts new ones; unacked deliveries come again. */
    public synchronized void restartConsumers() {
        if (closed) {
            return;
        }
        log.info("[{}] chaos: restarting the consumers", name);
        closeAll(consumers);
        afterConsumersStopped();
        consumers = startConsumers();
    }

    /**
     * Runs between closing the consumers and starting new ones on a chaos restart: where a
     * service makes the restart look like a crash. Default: nothing.
     */
    protected void afterConsumersStopped() {}

    private Relay buildRelay() {
        Relay.Builder builder = Relay.builder()
                .relayId(name + "-relay-" + generation.incrementAndGet())
                .dataSource(db.dataSource())
                .tables(db.tables())
                .workers(1)
                .batchSize(200)
                .pollInterval(Duration.ofMillis(100))
                .publishTimeout(Duration.ofSeconds(5))
                .laneLease(Duration.ofSeconds(10))
                .backoff(Duration.ofMillis(100), Duration.ofSeconds(2))
                .shutdownTimeout(Duration.ofSeconds(5))
                .wakeOn(outbox);
        routes(builder);
        return builder.build();
    }

    public String name() {
        return name;
    }

    public ServiceDb db() {
        return db;
    }

    private static void closeAll(List<AutoCloseable> list) {
        for (AutoCloseable c : list) {
            try {
                c.close();
            } catch (Exception e) {
                log.warn("closing {} failed: {}", c, e.toString());
            }
        }
    }

    /** Stops consumers, then the relay, then writes the last delivery rows. The pool stays open for the report. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeAll(consumers);
        if (relay != null) {
            relay.close();
        }
        deliveries.close();
    }
}
