package io.txbox.inbox.consumer.internal;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.ParkedKeys;
import io.txbox.inbox.Resolution;
import io.txbox.inbox.consumer.ConsumerBuilder;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.KeyPolicy;
import io.txbox.inbox.consumer.TwoPhaseHandler;
import io.txbox.internal.Args;
import io.txbox.internal.Backoff;
import io.txbox.internal.Connections;
import io.txbox.internal.Dialect;
import io.txbox.internal.Transactions;
import io.txbox.internal.KeyLogs;
import io.txbox.internal.KeyRules;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.sql.Connection;
import java.sql.SQLException;
import io.txbox.inbox.Receipt;
import io.txbox.inbox.Claim;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.TwoPhaseStore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * <p>Obtain one from {@link ConsumerBuilder#processor()}.
 */
public final class DeliveryProcessor {
    private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

    private final String consumer;
    // One of the two modes: an inbox with a DataSource and a handler in its transaction, or a
    // two-phase store and a handler outside any transaction.
    private final @Nullable Inbox inbox;
    private final @Nullable DataSource dataSource;
    private final @Nullable Handler handler;
    private final @Nullable TwoPhaseStore store;
    private final @Nullable TwoPhaseHandler twoPhaseHandler;
    private final String keyHeader;
    private final KeyPolicy keyPolicy;
    private final Backoff backoff;
    private final ConsumerListener listener;
    private final Clock clock;
    private final Duration shutdownTimeout;
    private final int batchSize;
    private final KeyLogs keyLogs;
    private final AtomicInteger consecutiveErrors = new AtomicInteger();
    private final AtomicInteger deadLetterFailures = new AtomicInteger();
    // Whether the database is PostgreSQL, where commits chain and a batch's inbox rows go in one
    // statement; null until a connection said which database it is.
    private volatile @Nullable Boolean postgres;
    // Sequenced dead letters (parkKeys), or null when off.
    private final @Nullable Parking parking;

    DeliveryProcessor(ConsumerOptions b) {
        this.consumer = b.consumer();
        this.inbox = b.inbox();
        this.dataSource = b.dataSource();
        this.store = b.store();
        this.keyHeader = b.keyHeader();
        this.keyPolicy = b.keyPolicy();
        this.backoff = b.backoff();
        this.listener = new GuardedListener(b.listener());
        this.clock = b.clock();
        this.shutdownTimeout = b.shutdownTimeout();
        this.batchSize = b.batchSize();
        this.keyLogs = KeyLogs.of(b.hashKeysInLogs());
        this.handler = b.handler() == null ? null : new MdcHandler(b.handler(), consumer, keyLogs, b.tracing());
        this.twoPhaseHandler = b.twoPhaseHandler() == null ? null
                : new MdcHandler(b.twoPhaseHandler(), consumer, keyLogs, b.tracing());
        TwoPhaseStore claims = store;
        this.parking = !b.parkKeys() ? null : claims != null
                ? new Parking(consumer, java.util.Objects.requireNonNull(claims.parkedKeys(), "checked by the builder"),
                        keyLogs, b.parkedPollInterval(), null, m -> underClaim(claims, m, null))
                : new Parking(consumer, inbox().parkedKeys(database()), keyLogs, b.parkedPollInterval(), handler(),
                        null);
    }

    /**
     * Runs one delivery through the inbox and the handler. Blocks for the database transaction
     * (and its retries); never throws for a handler or database failure, which become
     * {@link Decision.Retry}.
     */
    public Decision process(Delivery delivery) {
        Args.notNull(delivery, "delivery");
        String key = resolveKey(delivery);
        if (key == null) {
            return keyless(delivery);
        }
        InboundMessage message = message(delivery, key);
        String orderingKey = orderingKey(delivery);
        Instant start = clock.instant();
        Outcome outcome;
        try {
            outcome = store != null ? underClaim(store, message, orderingKey)
                    : inbox().process(database(), message, handlerFor(Parking.one(message, orderingKey)));
        } catch (InvalidInputException e) {
            log.warn("[{}] {} key {}: dead-lettering, refused by the inbox: {}", consumer(), delivery.coordinates(),
                    logKey(key), keyLogs.redact(e.getMessage(), key));
            return new Decision.DeadLetter(String.valueOf(e.getMessage()));
        } catch (RuntimeException e) {
            // The database failed, not the message: nothing was recorded, so back off and retry.
            Duration delay = retryDelay(consecutiveErrors.incrementAndGet());
            log.warn("[{}] {} key {}: inbox transaction failed, retry in {}: {}", consumer(), delivery.coordinates(),
                    logKey(key), delay, keyLogs.redact(e.toString(), key));
            listener.onError(consumer(), e);
            listener.onRetry(consumer(), delay, e.toString());
            return new Decision.Retry(delay, e.toString());
        }
        heard(outcome.status(), Duration.between(start, clock.instant()));
        return decide(delivery, key, outcome);
    }

    /**
     * Runs deliveries in order, in one database transaction when the builder's
     * {@code batchSize} is above 1 and all goes well, else one transaction per delivery (see
     * {@link ConsumerBuilder#batchSize(int)}). Returns the decisions for a prefix of
     * {@code deliveries}, in order: processing stops after the first {@link Decision.Retry}, and
     * the deliveries after it were not run (deliver them again, after the retry, to keep their
     * order). Never throws for a handler or database failure.
     */
    public List<Decision> processBatch(List<Delivery> deliveries) {
        Args.notNull(deliveries, "deliveries");
        for (int i = 0; i < deliveries.size(); i++) {
            Args.notNull(deliveries.get(i), "deliveries[" + i + "]");
        }
        if (deliveries.size() > 1 && batchSize > 1 && store == null) {
            List<Decision> decisions = inOneTransaction(deliveries);
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
     * insert: atomic mode, one delivery per transaction, on PostgreSQL.
     */
    public boolean chains() {
        if (store != null || batchSize > 1) {
            return false;
        }
        Boolean known = postgres;
        if (known == null) {
            try {
                known = Dialect.of(database()) == Dialect.POSTGRESQL;
            } catch (RuntimeException e) {
                return false; // the database is unreachable: ask again next time
            }
            postgres = known;
        }
        return known;
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
        List<Decision> decisions = new ArrayList<>(deliveries.size());
        ChainReporter reporter = new ChainReporter(clock, this::heard);
        boolean[] stopped = {false};
        Predicate<Outcome> more = o -> {
            reporter.asked(o);
            if (o.status() != Outcome.Status.PROCESSED && o.status() != Outcome.Status.DUPLICATE) {
                return false;
            }
            stopped[0] = !proceed.getAsBoolean();
            return !stopped[0];
        };
        int i = 0;
        while (i < deliveries.size() && !stopped[0]) {
            if (i > 0 && !proceed.getAsBoolean()) {
                break;
            }
            List<String> keys = new ArrayList<>();
            List<InboundMessage> messages = new ArrayList<>();
            Map<InboundMessage, String> orderingKeys = new IdentityHashMap<>();
            for (int j = i; j < deliveries.size(); j++) {
                String key = resolveKey(Args.notNull(deliveries.get(j), "deliveries[" + j + "]"));
                if (key == null) {
                    break;
                }
                keys.add(key);
                messages.add(message(deliveries.get(j), key));
                String orderingKey = orderingKey(deliveries.get(j));
                if (orderingKey != null) {
                    orderingKeys.put(messages.get(messages.size() - 1), orderingKey);
                }
            }
            List<Outcome> outcomes = List.of();
            if (messages.size() > 1) {
                reporter.start();
                outcomes = inbox().processChained(database(), messages, handlerFor(orderingKeys), more);
                reporter.returned(outcomes);
            }
            for (int k = 0; k < outcomes.size(); k++, i++) {
                Decision decision = decide(deliveries.get(i), keys.get(k), outcomes.get(k));
                decisions.add(decision);
                if (!(decision instanceof Decision.Ack)) {
                    return decisions;
                }
            }
            if (stopped[0] || i >= deliveries.size()) {
                break;
            }
            // A delivery the chain left (or one alone, or keyless) runs as process runs it.
            Decision decision = process(deliveries.get(i++));
            decisions.add(decision);
            if (!(decision instanceof Decision.Ack)) {
                break;
            }
        }
        return decisions;
    }

    /** Whether a batch receives its inbox rows in one call: on PostgreSQL. */
    private boolean receivesTogether(Connection c) throws SQLException {
        Boolean known = postgres;
        if (known == null) {
            known = Dialect.of(c) == Dialect.POSTGRESQL;
            postgres = known;
        }
        return known;
    }

    /** An outcome the database settled: the listener hears it, and the error streak ends. */
    private void heard(Outcome.Status status, Duration took) {
        consecutiveErrors.set(0);
        listener.onOutcome(consumer(), status, took);
    }

    /**
     * The batch's one transaction; {@code null} when anything but a first delivery, a duplicate
     * or a dead key came up, or the database failed: then nothing was committed.
     */
    private @Nullable List<Decision> inOneTransaction(List<Delivery> deliveries) {
        int n = deliveries.size();
        String[] keys = new String[n];
        Outcome[] outcomes = new Outcome[n];
        Instant start = clock.instant();
        try (Connection c = database().getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            boolean committed = false;
            try {
                if (autoCommit) {
                    c.setAutoCommit(false);
                }
                // On PostgreSQL the batch's inbox rows in one call (Inbox.receiveAll). A key that
                // comes again later in the batch is received at its turn, after its first
                // delivery's result is stored, so it reads as it would one delivery at a time.
                // On MariaDB/MySQL each receive at its turn: a result stored there releases the
                // savepoints of the receives after it (Inbox.storeResult).
                boolean together = receivesTogether(c);
                InboundMessage[] messages = new InboundMessage[n];
                boolean[] repeat = new boolean[n];
                Set<String> seen = new HashSet<>();
                List<InboundMessage> ahead = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    keys[i] = resolveKey(deliveries.get(i));
                    if (keys[i] != null) {
                        messages[i] = message(deliveries.get(i), keys[i]);
                        repeat[i] = !together || !seen.add(keys[i]);
                        if (!repeat[i]) {
                            ahead.add(messages[i]);
                        }
                    }
                }
                @Nullable Iterator<Receipt> received =
                        ahead.isEmpty() ? null : inbox().receiveAll(c, ahead).iterator();
                Map<InboundMessage, String> orderingKeys = new IdentityHashMap<>();
                for (int i = 0; i < n; i++) {
                    String orderingKey = orderingKey(deliveries.get(i));
                    if (messages[i] != null && orderingKey != null) {
                        orderingKeys.put(messages[i], orderingKey);
                    }
                }
                Handler batchHandler = handlerFor(orderingKeys);
                for (int i = 0; i < n; i++) {
                    if (messages[i] != null) {
                        Receipt receipt = repeat[i] ? inbox().receive(c, messages[i])
                                : java.util.Objects.requireNonNull(received).next();
                        outcomes[i] = handle(c, messages[i], receipt, batchHandler);
                        if (outcomes[i] == null) {
                            log.debug("[{}] {}: key in flight elsewhere; the batch runs one delivery at a time",
                                    consumer(), deliveries.get(i).coordinates());
                            return null;
                        }
                    }
                }
                c.commit();
                committed = true;
            } finally {
                if (!committed) {
                    rollbackQuietly(c);
                }
                if (autoCommit) {
                    c.setAutoCommit(true);
                }
            }
        } catch (Exception e) {
            if (log.isDebugEnabled()) {
                String why = e.toString();
                for (String key : keys) {
                    why = key == null ? why : keyLogs.redact(why, key);
                }
                log.debug("[{}] batch of {} rolled back, running it one delivery at a time: {}", consumer(), n, why);
            }
            return null;
        }
        consecutiveErrors.set(0); // keyless deliveries too: the database answered
        Duration each = Duration.between(start, clock.instant()).dividedBy(n);
        List<Decision> decisions = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            if (keys[i] == null) {
                decisions.add(keyless(deliveries.get(i)));
            } else {
                heard(outcomes[i].status(), each);
                decisions.add(decide(deliveries.get(i), keys[i], outcomes[i]));
            }
        }
        return decisions;
    }

    /** One received delivery inside the batch's transaction; {@code null} for a key in flight elsewhere. */
    private @Nullable Outcome handle(Connection c, InboundMessage message, Receipt receipt, Handler handler)
            throws Exception {
        switch (receipt.status()) {
            case FIRST: {
                byte[] result = handler.handle(c, message);
                Transactions.requireNotAborted(c, "consumer " + consumer() + " key " + logKey(message.key()));
                if (result != null) {
                    inbox().storeResult(c, message, result);
                }
                return new Outcome(Outcome.Status.PROCESSED, result, receipt.attempts(), null, null);
            }
            case DUPLICATE:
                return new Outcome(Outcome.Status.DUPLICATE, receipt.result(), receipt.attempts(), null, null);
            case DEAD:
                return new Outcome(Outcome.Status.DEAD, null, receipt.attempts(), receipt.reason(), null);
            case IN_FLIGHT:
            default:
                return null;
        }
    }

    /**
     * Two-phase: claim, the handler, complete; a handler exception fails the claim (counted).
     * A lost lease or an unreachable store throws, which retries the delivery.
     */
    private Outcome underClaim(TwoPhaseStore claims, InboundMessage message, @Nullable String orderingKey) {
        Claim claim;
        try {
            claim = claims.claim(message);
        } catch (KeyReuseException e) {
            return new Outcome(Outcome.Status.KEY_REUSED, null, 0, e.getMessage(), null);
        }
        switch (claim.status()) {
            case DUPLICATE:
                return new Outcome(Outcome.Status.DUPLICATE, claim.result(), claim.fencingToken(), null, null);
            case IN_FLIGHT:
                return new Outcome(Outcome.Status.IN_FLIGHT, null, claim.fencingToken(), claim.reason(), null);
            case DEAD:
                return new Outcome(Outcome.Status.DEAD, null, claim.fencingToken(), claim.reason(), null);
            case ACQUIRED:
            default:
                break;
        }
        if (parking != null && orderingKey != null && parking.parkIfParked(orderingKey, message)) {
            claims.release(claim); // it runs when the key is resolved
            return new Outcome(Outcome.Status.PROCESSED, null, claim.fencingToken(), null, null);
        }
        byte[] result;
        try {
            result = java.util.Objects.requireNonNull(twoPhaseHandler).handle(message);
        } catch (Exception e) {
            return claims.fail(claim, e);
        }
        claims.complete(claim, result);
        return new Outcome(Outcome.Status.PROCESSED, result, claim.fencingToken(), null, null);
    }

    /** The delivery's ordering key when this consumer parks keys; {@code null} otherwise. */
    private @Nullable String orderingKey(Delivery delivery) {
        return parking == null ? null : Parking.orderingKey(delivery.orderingKey());
    }

    /** The handler, wrapped to park the messages of parked keys when this consumer parks keys. */
    private Handler handlerFor(Map<InboundMessage, String> orderingKeys) {
        return parking == null || orderingKeys.isEmpty() ? handler() : parking.wrap(handler(), orderingKeys);
    }

    private Decision parkDead(Delivery delivery, String key, String orderingKey, String why, Outcome outcome) {
        try {
            java.util.Objects.requireNonNull(parking).parkDead(orderingKey, message(delivery, key), why);
        } catch (RuntimeException e) {
            Duration delay = retryDelay(consecutiveErrors.incrementAndGet());
            log.warn("[{}] {} key {}: parking the dead message failed, retry in {}: {}", consumer(),
                    delivery.coordinates(), logKey(key), delay, keyLogs.redact(e.toString(), key));
            listener.onError(consumer(), e);
            return new Decision.Retry(delay, e.toString());
        }
        log.error("[{}] {} key {}: {}; its ordering key is parked", consumer(), delivery.coordinates(), logKey(key),
                keyLogs.redact(why, key));
        return new Decision.Ack(outcome);
    }

    /**
     * The parked keys of this consumer ({@link ConsumerBuilder#parkKeys}).
     *
     * @throws io.txbox.ConfigException if this consumer does not park keys
     */
    public ParkedKeys parkedKeys() {
        return parking().keys();
    }

    /**
     * Retries ({@code skipHead} false) or skips the dead message of a parked ordering key and
     * runs the key's other parked messages in order, each as this consumer runs a delivery (its
     * handler, in its mode).
     *
     * @throws io.txbox.ConfigException if this consumer does not park keys
     */
    public Resolution resolveParked(String orderingKey, boolean skipHead) {
        Args.notNull(orderingKey, "orderingKey");
        return parking().resolve(orderingKey, skipHead);
    }

    /** Starts carrying out the resolutions operators request ({@link ParkedKeys#request}), if this consumer parks keys. */
    public void startParked() {
        if (parking != null) {
            parking.start(listener);
        }
    }

    /** Stops what {@link #startParked} started. */
    public void stopParked() {
        if (parking != null) {
            parking.stop();
        }
    }

    private Parking parking() {
        if (parking == null) {
            throw new io.txbox.ConfigException("consumer " + Texts.quote(consumer) + " does not park keys; build it "
                    + "with parkKeys(true)");
        }
        return parking;
    }

    private Inbox inbox() {
        return java.util.Objects.requireNonNull(inbox, "database mode");
    }

    private DataSource database() {
        return java.util.Objects.requireNonNull(dataSource, "database mode");
    }

    private Handler handler() {
        return java.util.Objects.requireNonNull(handler, "database mode");
    }

    private static void rollbackQuietly(Connection c) {
        // A failure here means the connection is gone; the database has rolled back anyway.
        Connections.rollbackQuietly(c);
    }

    private InboundMessage message(Delivery delivery, String key) {
        return new InboundMessage(key, delivery.payload(), delivery.headers(), null, delivery.redelivered());
    }

    private Decision keyless(Delivery delivery) {
        String reason = keyProblem(delivery);
        log.warn("[{}] {}: dead-lettering, {}", consumer(), delivery.coordinates(), reason);
        return new Decision.DeadLetter(reason);
    }

    /** The key as logs and the MDC show it: quoted, or hashed under {@code hashKeysInLogs}. */
    private String logKey(String key) {
        return keyLogs.show(key);
    }

    private Decision decide(Delivery delivery, String key, Outcome outcome) {
        String reason = outcome.reason() == null ? outcome.status().toString() : outcome.reason();
        switch (outcome.status()) {
            case PROCESSED:
                log.debug("[{}] {} key {}: processed", consumer(), delivery.coordinates(), logKey(key));
                return new Decision.Ack(outcome);
            case DUPLICATE:
                log.debug("[{}] {} key {}: duplicate, skipped", consumer(), delivery.coordinates(), logKey(key));
                return new Decision.Ack(outcome);
            case FAILED: {
                Duration delay = retryDelay(Math.max(1, outcome.attempts()));
                log.warn("[{}] {} key {}: attempt {} failed, retry in {}: {}", consumer(), delivery.coordinates(),
                        logKey(key), outcome.attempts(), delay, keyLogs.redact(reason, key));
                listener.onRetry(consumer(), delay, reason);
                return new Decision.Retry(delay, reason);
            }
            case IN_FLIGHT: {
                Duration delay = retryDelay(1);
                log.info("[{}] {} key {}: in flight elsewhere, retry in {}", consumer(), delivery.coordinates(),
                        logKey(key), delay);
                listener.onRetry(consumer(), delay, reason);
                return new Decision.Retry(delay, "in flight: " + reason);
            }
            case DEAD: {
                String why = "dead after " + outcome.attempts() + " attempts: " + reason;
                String orderingKey = orderingKey(delivery);
                if (parking != null && orderingKey != null) {
                    return parkDead(delivery, key, orderingKey, why, outcome);
                }
                log.error("[{}] {} key {}: dead-lettering, {}", consumer(), delivery.coordinates(), logKey(key),
                        keyLogs.redact(why, key));
                return new Decision.DeadLetter(why);
            }
            case KEY_REUSED:
            default:
                log.error("[{}] {} key {}: dead-lettering, {}", consumer(), delivery.coordinates(), logKey(key),
                        keyLogs.redact(reason, key));
                return new Decision.DeadLetter(reason);
        }
    }

    private @Nullable String resolveKey(Delivery delivery) {
        byte[] raw = delivery.key();
        if (raw != null) {
            try {
                return KeyRules.decode(keyWhat(), raw);
            } catch (InvalidInputException e) {
                // falls through to the policy
            }
        }
        if (keyPolicy == KeyPolicy.TRANSPORT_COORDINATES && delivery.transportKey() != null) {
            log.debug("[{}] {}: no usable key header, keyed by transport coordinates", consumer(),
                    delivery.coordinates());
            return delivery.transportKey();
        }
        return null;
    }

    private String keyProblem(Delivery delivery) {
        byte[] raw = delivery.key();
        if (raw == null) {
            return keyWhat() + " is missing";
        }
        try {
            KeyRules.decode(keyWhat(), raw);
            return keyWhat() + " was refused";
        } catch (InvalidInputException e) {
            return String.valueOf(e.getMessage());
        }
    }

    private String keyWhat() {
        return "idempotency key header " + Texts.quote(keyHeader);
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
        deadLetterFailures.set(0);
        log.info("[{}] {}: dead-lettered to {}", consumer(), delivery.coordinates(), destination);
        listener.onDeadLetter(consumer(), reason);
    }

    /**
     * Reports a dead-letter publish that failed or was not confirmed, and returns how long to
     * wait before the delivery is run again (unacked meanwhile): the backoff of the number of
     * such failures in a row.
     */
    public Duration deadLetterFailed(Delivery delivery, Exception error) {
        Args.notNull(delivery, "delivery");
        Args.notNull(error, "error");
        Duration delay = retryDelay(deadLetterFailures.incrementAndGet());
        log.warn("[{}] {}: dead-letter publish failed, retry in {}: {}", consumer(), delivery.coordinates(), delay,
                error.toString());
        listener.onError(consumer(), error);
        return delay;
    }

    /** The inbox consumer name, used as log context and thread name. */
    public String consumer() {
        return consumer;
    }

    /** The header the key is read from. */
    public String keyHeader() {
        return keyHeader;
    }

    /** The key policy. */
    public KeyPolicy keyPolicy() {
        return keyPolicy;
    }

    /** How many deliveries at most share one transaction ({@link ConsumerBuilder#batchSize(int)}). */
    public int batchSize() {
        return batchSize;
    }

    /** The backoff used for retries. */
    public Backoff backoff() {
        return backoff;
    }

    /** The delay before retry number {@code attempt} (1 for the first), with jitter. */
    public Duration retryDelay(int attempt) {
        return backoff.delay(attempt, ThreadLocalRandom.current()::nextDouble);
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
