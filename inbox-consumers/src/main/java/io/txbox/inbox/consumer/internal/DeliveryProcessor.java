package io.txbox.inbox.consumer.internal;

import io.txbox.ConfigException;
import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.ParkedKeys;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.KeyPolicy;
import io.txbox.inbox.consumer.TwoPhaseHandler;
import io.txbox.internal.Args;
import io.txbox.internal.Backoff;
import io.txbox.internal.KeyLogs;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The broker-neutral heart of a consumer: resolves the idempotency key of a {@link Delivery}
 * under the {@link KeyPolicy}, runs {@link Inbox#process} (inbox entry, handler, result, commit:
 * one database transaction), or for a two-phase consumer claims it in its
 * {@link TwoPhaseStore}, runs the {@link TwoPhaseHandler} and completes (or fails) the claim, and
 * says what the adapter must do next. Thread-safe.
 *
 * <ul>
 *   <li>PROCESSED, DUPLICATE: {@link Decision.Ack}.
 *   <li>FAILED (the handler threw; the attempt is counted): {@link Decision.Retry} after
 *       {@link #retryDelay(int)} of the attempt count. IN_FLIGHT likewise.
 *   <li>DEAD (failed {@code maxAttempts} times, now or earlier), KEY_REUSED, a missing or
 *       malformed key under {@link KeyPolicy#DEAD_LETTER}, a payload the inbox refuses:
 *       {@link Decision.DeadLetter} with the reason.
 *   <li>The database itself failing (unreachable, a conflict that outlived the transaction
 *       retries), or the two-phase store failing or reporting a lost lease: {@link Decision.Retry},
 *       with a backoff that grows while such errors follow each other. Nothing was completed, so
 *       nothing is lost.
 * </ul>
 *
 * <p>Obtain one from {@code ConsumerBuilder#processor()}.
 */
public final class DeliveryProcessor {
    private final String consumer;
    private final Deliveries mode;
    private final DeliveryKeys keys;
    private final Decisions decisions;
    private final Backoff backoff;
    private final ConsumerListener listener;
    private final Clock clock;
    private final Duration shutdownTimeout;
    private final int batchSize;
    // Sequenced dead letters (parkKeys), or null when off.
    private final @Nullable Parking parking;

    DeliveryProcessor(ConsumerOptions b) {
        this.consumer = b.consumer();
        this.backoff = b.backoff();
        this.listener = new GuardedListener(b.listener());
        this.clock = b.clock();
        this.shutdownTimeout = b.shutdownTimeout();
        this.batchSize = b.batchSize();
        KeyLogs keyLogs = KeyLogs.of(b.hashKeysInLogs());
        this.keys = new DeliveryKeys(consumer, b.keyHeader(), b.keyPolicy(), b.parkKeys());
        TwoPhaseStore store = b.store();
        if (store != null) {
            ParkedKeys parked = !b.parkKeys() ? null
                    : Objects.requireNonNull(store.parkedKeys(), "checked by the builder");
            TwoPhaseDeliveries twoPhase = new TwoPhaseDeliveries(store,
                    new MdcHandler(Objects.requireNonNull(b.twoPhaseHandler()), consumer, keyLogs, b.tracing()), parked);
            this.parking = parked == null ? null
                    : new Parking(consumer, parked, keyLogs, b.parkedPollInterval(), null, m -> twoPhase.run(m, null));
            this.decisions = new Decisions(consumer, keys, keyLogs, backoff, listener, parking);
            this.mode = twoPhase;
        } else {
            Inbox inbox = Objects.requireNonNull(b.inbox(), "database mode");
            DataSource dataSource = Objects.requireNonNull(b.dataSource(), "database mode");
            Handler handler = new MdcHandler(Objects.requireNonNull(b.handler(), "database mode"), consumer, keyLogs,
                    b.tracing());
            this.parking = !b.parkKeys() ? null
                    : new Parking(consumer, inbox.parkedKeys(dataSource), keyLogs, b.parkedPollInterval(), handler, null);
            this.decisions = new Decisions(consumer, keys, keyLogs, backoff, listener, parking);
            this.mode = new AtomicDeliveries(consumer, inbox, dataSource, handler, parking, keys, decisions, keyLogs,
                    clock);
        }
    }

    /**
     * Runs one delivery through the inbox and the handler. Blocks for the database transaction
     * (and its retries); never throws for a handler or database failure, which become
     * {@link Decision.Retry}.
     */
    public Decision process(Delivery delivery) {
        Args.notNull(delivery, "delivery");
        String key = keys.resolve(delivery);
        if (key == null) {
            return decisions.keyless(delivery);
        }
        InboundMessage message = keys.message(delivery, key);
        Instant start = clock.instant();
        Outcome outcome;
        try {
            outcome = mode.run(message, keys.orderingKey(delivery));
        } catch (InvalidInputException e) {
            return decisions.refused(delivery, key, e);
        } catch (RuntimeException e) {
            return decisions.failed(delivery, key, e);
        }
        decisions.heard(outcome.status(), Duration.between(start, clock.instant()));
        return decisions.decide(delivery, key, outcome);
    }

    /**
     * Runs deliveries in order, in one database transaction when the builder's
     * {@code batchSize} is above 1 and all goes well, else one transaction per delivery (see
     * {@code ConsumerBuilder#batchSize(int)}). Returns the decisions for a prefix of
     * {@code deliveries}, in order: processing stops after the first {@link Decision.Retry}, and
     * the deliveries after it were not run (deliver them again, after the retry, to keep their
     * order). Never throws for a handler or database failure.
     */
    public List<Decision> processBatch(List<Delivery> deliveries) {
        Args.notNull(deliveries, "deliveries");
        for (int i = 0; i < deliveries.size(); i++) {
            Args.notNull(deliveries.get(i), "deliveries[" + i + "]");
        }
        if (deliveries.size() > 1 && batchSize > 1 && mode instanceof AtomicDeliveries atomic) {
            List<Decision> decisions = atomic.inOneTransaction(deliveries);
            if (decisions != null) {
                return decisions;
            }
        }
        List<Decision> decisions = new ArrayList<>(deliveries.size());
        for (Delivery delivery : deliveries) {
            Decision decision = process(delivery);
            decisions.add(decision);
            if (decision instanceof Decision.Retry) {
                break;
            }
        }
        return decisions;
    }

    /**
     * Whether {@link #processChained} sends each delivery's commit with the next one's inbox
     * insert: atomic mode, one delivery per transaction, on a database that chains commits.
     */
    public boolean chains() {
        return batchSize == 1 && mode instanceof AtomicDeliveries atomic && atomic.chainsCommits();
    }

    /**
     * Runs deliveries in order, one transaction each like {@link #process}, each commit sent
     * with the next delivery's inbox insert ({@link Inbox#processChained}) where {@link #chains}.
     * Returns the decisions for a prefix of {@code deliveries}, in order, each taken once its
     * commit went through. It stops after the first decision other than an ack (the adapter
     * carries out a retry or a dead letter before anything later runs), and before a delivery
     * when {@code proceed}, asked between two deliveries, says no. Never throws for a handler
     * or database failure.
     */
    public List<Decision> processChained(List<Delivery> deliveries, BooleanSupplier proceed) {
        Args.notNull(deliveries, "deliveries");
        Args.notNull(proceed, "proceed");
        if (mode instanceof AtomicDeliveries atomic) {
            return atomic.chain(deliveries, proceed, this::process);
        }
        List<Decision> decisions = new ArrayList<>(deliveries.size());
        for (int i = 0; i < deliveries.size() && (i == 0 || proceed.getAsBoolean()); i++) {
            Decision decision = process(deliveries.get(i));
            decisions.add(decision);
            if (!(decision instanceof Decision.Ack)) {
                break;
            }
        }
        return decisions;
    }

    /** This consumer's parking; {@code null} when it does not park keys. */
    @Nullable Parking parking() {
        return parking;
    }

    /**
     * This consumer's parking.
     *
     * @throws ConfigException if this consumer does not park keys
     */
    Parking parked() {
        if (parking == null) {
            throw new ConfigException("consumer " + Texts.quote(consumer) + " does not park keys; build it "
                    + "with parkKeys(true)");
        }
        return parking;
    }

    /**
     * Reports a dead letter the broker has stored (acknowledged or confirmed): logs it with its
     * {@code destination} and tells the listener. The adapter acks the delivery or commits its
     * offset next.
     */
    public void deadLettered(Delivery delivery, String destination, String reason) {
        Args.notNull(delivery, "delivery");
        Args.notNull(destination, "destination");
        Args.notNull(reason, "reason");
        decisions.deadLettered(delivery, destination, reason);
    }

    /**
     * Reports a dead-letter publish that failed or was not confirmed, and returns how long to
     * wait before the delivery is run again (unacked meanwhile): the backoff of the number of
     * such failures in a row.
     */
    public Duration deadLetterFailed(Delivery delivery, Exception error) {
        Args.notNull(delivery, "delivery");
        Args.notNull(error, "error");
        return decisions.deadLetterFailed(delivery, error);
    }

    /** The inbox consumer name, used as log context and thread name. */
    public String consumer() {
        return consumer;
    }

    /** The header the key is read from. */
    public String keyHeader() {
        return keys.keyHeader();
    }

    /** The key policy. */
    public KeyPolicy keyPolicy() {
        return keys.keyPolicy();
    }

    /** How many deliveries at most share one transaction ({@code ConsumerBuilder#batchSize(int)}). */
    public int batchSize() {
        return batchSize;
    }

    /** The backoff used for retries. */
    public Backoff backoff() {
        return backoff;
    }

    /** The delay before retry number {@code attempt} (1 for the first), with jitter. */
    public Duration retryDelay(int attempt) {
        return decisions.retryDelay(attempt);
    }

    /** The clock retry deadlines are measured on. */
    public Clock clock() {
        return clock;
    }

    /** How long a graceful close waits for the delivery in progress. */
    public Duration shutdownTimeout() {
        return shutdownTimeout;
    }

    /** The listener; exceptions it throws are logged and swallowed. */
    public ConsumerListener listener() {
        return listener;
    }
}
