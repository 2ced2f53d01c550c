package io.txbox.inbox.consumer.internal;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.ConsumerBuilder;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.KeyPolicy;
import io.txbox.internal.Args;
import io.txbox.internal.Backoff;
import io.txbox.internal.KeyRules;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The broker-neutral heart of a consumer: resolves the idempotency key of a {@link Delivery}
 * under the {@link KeyPolicy}, runs {@link Inbox#process} (inbox entry, handler, result, commit:
 * one database transaction) and says what the adapter must do next. Thread-safe.
 *
 * <ul>
 *   <li>PROCESSED, DUPLICATE: {@link Decision.Ack}.
 *   <li>FAILED (the handler threw; the attempt is counted): {@link Decision.Retry} after
 *       {@link #retryDelay(int)} of the attempt count. IN_FLIGHT likewise.
 *   <li>DEAD (failed {@code maxAttempts} times, now or earlier), KEY_REUSED, a missing or
 *       malformed key under {@link KeyPolicy#DEAD_LETTER}, a payload the inbox refuses:
 *       {@link Decision.DeadLetter} with the reason.
 *   <li>The database itself failing (unreachable, a conflict that outlived the transaction
 *       retries): {@link Decision.Retry}, with a backoff that grows while such errors follow
 *       each other. Nothing was recorded, so nothing is lost.
 * </ul>
 *
 * <p>Obtain one from {@link ConsumerBuilder#processor()}.
 */
public final class DeliveryProcessor {
    private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

    private final Inbox inbox;
    private final DataSource dataSource;
    private final Handler handler;
    private final String keyHeader;
    private final KeyPolicy keyPolicy;
    private final Backoff backoff;
    private final ConsumerListener listener;
    private final Clock clock;
    private final Duration shutdownTimeout;
    private final AtomicInteger consecutiveErrors = new AtomicInteger();

    /** The options of a {@link ConsumerBuilder}, checked by it; none may be null. */
    public DeliveryProcessor(Inbox inbox, DataSource dataSource, Handler handler, String keyHeader,
            KeyPolicy keyPolicy, Backoff backoff, ConsumerListener listener, Clock clock, Duration shutdownTimeout) {
        this.inbox = Args.notNull(inbox, "inbox");
        this.dataSource = Args.notNull(dataSource, "dataSource");
        this.handler = Args.notNull(handler, "handler");
        this.keyHeader = Args.notNull(keyHeader, "keyHeader");
        this.keyPolicy = Args.notNull(keyPolicy, "keyPolicy");
        this.backoff = Args.notNull(backoff, "backoff");
        this.listener = new GuardedListener(Args.notNull(listener, "listener"));
        this.clock = Args.notNull(clock, "clock");
        this.shutdownTimeout = Args.notNull(shutdownTimeout, "shutdownTimeout");
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
            String reason = keyProblem(delivery);
            log.warn("[{}] {}: dead-lettering, {}", consumer(), delivery.coordinates(), reason);
            return new Decision.DeadLetter(reason);
        }
        InboundMessage message = new InboundMessage(key, delivery.payload(), delivery.headers(), null,
                delivery.redelivered());
        Instant start = clock.instant();
        Outcome outcome;
        try {
            outcome = inbox.process(dataSource, message, handler);
        } catch (InvalidInputException e) {
            log.warn("[{}] {} key {}: dead-lettering, refused by the inbox: {}", consumer(), delivery.coordinates(),
                    Texts.quote(key), e.getMessage());
            return new Decision.DeadLetter(String.valueOf(e.getMessage()));
        } catch (RuntimeException e) {
            // The database failed, not the message: nothing was recorded, so back off and retry.
            Duration delay = retryDelay(consecutiveErrors.incrementAndGet());
            log.warn("[{}] {} key {}: inbox transaction failed, retry in {}: {}", consumer(), delivery.coordinates(),
                    Texts.quote(key), delay, e.toString());
            listener.onError(consumer(), e);
            listener.onRetry(consumer(), delay, e.toString());
            return new Decision.Retry(delay, e.toString());
        }
        consecutiveErrors.set(0);
        listener.onOutcome(consumer(), outcome.status(), Duration.between(start, clock.instant()));
        return decide(delivery, key, outcome);
    }

    private Decision decide(Delivery delivery, String key, Outcome outcome) {
        String reason = outcome.reason() == null ? outcome.status().toString() : outcome.reason();
        switch (outcome.status()) {
            case PROCESSED:
                log.debug("[{}] {} key {}: processed", consumer(), delivery.coordinates(), Texts.quote(key));
                return new Decision.Ack(outcome);
            case DUPLICATE:
                log.debug("[{}] {} key {}: duplicate, skipped", consumer(), delivery.coordinates(), Texts.quote(key));
                return new Decision.Ack(outcome);
            case FAILED: {
                Duration delay = retryDelay(Math.max(1, outcome.attempts()));
                log.warn("[{}] {} key {}: attempt {} failed, retry in {}: {}", consumer(), delivery.coordinates(),
                        Texts.quote(key), outcome.attempts(), delay, reason);
                listener.onRetry(consumer(), delay, reason);
                return new Decision.Retry(delay, reason);
            }
            case IN_FLIGHT: {
                Duration delay = retryDelay(1);
                log.info("[{}] {} key {}: in flight elsewhere, retry in {}", consumer(), delivery.coordinates(),
                        Texts.quote(key), delay);
                listener.onRetry(consumer(), delay, reason);
                return new Decision.Retry(delay, "in flight: " + reason);
            }
            case DEAD: {
                String why = "dead after " + outcome.attempts() + " attempts: " + reason;
                log.error("[{}] {} key {}: dead-lettering, {}", consumer(), delivery.coordinates(), Texts.quote(key), why);
                return new Decision.DeadLetter(why);
            }
            case KEY_REUSED:
            default:
                log.error("[{}] {} key {}: dead-lettering, {}", consumer(), delivery.coordinates(), Texts.quote(key),
                        reason);
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

    /** The inbox consumer name, used as log context and thread name. */
    public String consumer() {
        return inbox.consumer();
    }

    /** The header the key is read from. */
    public String keyHeader() {
        return keyHeader;
    }

    /** The key policy. */
    public KeyPolicy keyPolicy() {
        return keyPolicy;
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

    /** Shields the consumer from a listener that throws. */
    private static final class GuardedListener implements ConsumerListener {
        private final ConsumerListener delegate;

        GuardedListener(ConsumerListener delegate) {
            this.delegate = delegate;
        }

        @Override
        public void onOutcome(String consumer, Outcome.Status status, Duration took) {
            run(consumer, () -> delegate.onOutcome(consumer, status, took));
        }

        @Override
        public void onRetry(String consumer, Duration delay, String reason) {
            run(consumer, () -> delegate.onRetry(consumer, delay, reason));
        }

        @Override
        public void onDeadLetter(String consumer, String reason) {
            run(consumer, () -> delegate.onDeadLetter(consumer, reason));
        }

        @Override
        public void onAck(String consumer, int count) {
            run(consumer, () -> delegate.onAck(consumer, count));
        }

        @Override
        public void onError(String consumer, Throwable error) {
            run(consumer, () -> delegate.onError(consumer, error));
        }

        private static void run(String consumer, Runnable call) {
            try {
                call.run();
            } catch (RuntimeException e) {
                log.warn("[{}] consumer listener threw, ignored", consumer, e);
            }
        }
    }
}
