package io.txbox.inbox.consumer.internal;

import io.txbox.InvalidInputException;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.internal.Backoff;
import io.txbox.internal.KeyLogs;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns what happened to a delivery into its {@link Decision}, whichever mode ran it: the
 * outcome's rules, the backoffs (with the streaks of database and dead-letter failures they
 * grow with), the parking of a dead message, the log lines and the listener calls.
 */
final class Decisions {
    private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

    private final String consumer;
    private final DeliveryKeys keys;
    private final KeyLogs keyLogs;
    private final Backoff backoff;
    private final ConsumerListener listener;
    private final @Nullable Parking parking;
    private final AtomicInteger consecutiveErrors = new AtomicInteger();
    private final AtomicInteger deadLetterFailures = new AtomicInteger();

    Decisions(String consumer, DeliveryKeys keys, KeyLogs keyLogs, Backoff backoff, ConsumerListener listener,
            @Nullable Parking parking) {
        this.consumer = consumer;
        this.keys = keys;
        this.keyLogs = keyLogs;
        this.backoff = backoff;
        this.listener = listener;
        this.parking = parking;
    }

    Decision decide(Delivery delivery, String key, Outcome outcome) {
        String reason = outcome.reason() == null ? outcome.status().toString() : outcome.reason();
        switch (outcome.status()) {
            case PROCESSED:
                log.debug("{} - {} key {}: processed", consumer, delivery.coordinates(), logKey(key));
                return new Decision.Ack(outcome);
            case DUPLICATE:
                log.debug("{} - {} key {}: duplicate, skipped", consumer, delivery.coordinates(), logKey(key));
                return new Decision.Ack(outcome);
            case FAILED: {
                Duration delay = retryDelay(Math.max(1, outcome.attempts()));
                log.warn("{} - {} key {}: attempt {} failed, retry in {}: {}", consumer, delivery.coordinates(),
                        logKey(key), outcome.attempts(), delay, keyLogs.redact(reason, key));
                listener.onRetry(consumer, delay, reason);
                return new Decision.Retry(delay, reason);
            }
            case IN_FLIGHT: {
                Duration delay = retryDelay(1);
                log.info("{} - {} key {}: in flight elsewhere, retry in {}", consumer, delivery.coordinates(),
                        logKey(key), delay);
                listener.onRetry(consumer, delay, reason);
                return new Decision.Retry(delay, "in flight: " + reason);
            }
            case DEAD: {
                String why = "dead after " + outcome.attempts() + " attempts: " + reason;
                String orderingKey = keys.orderingKey(delivery);
                if (parking != null && orderingKey != null) {
                    return parkDead(delivery, key, orderingKey, why, outcome);
                }
                log.error("{} - {} key {}: dead-lettering, {}", consumer, delivery.coordinates(), logKey(key),
                        keyLogs.redact(why, key));
                return new Decision.DeadLetter(why);
            }
            case KEY_REUSED:
            default:
                log.error("{} - {} key {}: dead-lettering, {}", consumer, delivery.coordinates(), logKey(key),
                        keyLogs.redact(reason, key));
                return new Decision.DeadLetter(reason);
        }
    }

    private Decision parkDead(Delivery delivery, String key, String orderingKey, String why, Outcome outcome) {
        try {
            Objects.requireNonNull(parking).parkDead(orderingKey, keys.message(delivery, key), why);
        } catch (RuntimeException e) {
            Duration delay = retryDelay(consecutiveErrors.incrementAndGet());
            log.warn("{} - {} key {}: parking the dead message failed, retry in {}: {}", consumer,
                    delivery.coordinates(), logKey(key), delay, keyLogs.redact(e.toString(), key));
            listener.onError(consumer, e);
            return new Decision.Retry(delay, e.toString());
        }
        log.error("{} - {} key {}: {}; its ordering key is parked", consumer, delivery.coordinates(), logKey(key),
                keyLogs.redact(why, key));
        return new Decision.Ack(outcome);
    }

    /** A delivery without a key the policy accepts: dead-lettered. */
    Decision keyless(Delivery delivery) {
        String reason = keys.problem(delivery);
        log.warn("{} - {}: dead-lettering, {}", consumer, delivery.coordinates(), reason);
        return new Decision.DeadLetter(reason);
    }

    /** A message the inbox refused (its key, tenant or size): dead-lettered. */
    Decision refused(Delivery delivery, String key, InvalidInputException e) {
        log.warn("{} - {} key {}: dead-lettering, refused by the inbox: {}", consumer, delivery.coordinates(),
                logKey(key), keyLogs.redact(e.getMessage(), key));
        return new Decision.DeadLetter(String.valueOf(e.getMessage()));
    }

    /** The database failed, not the message: nothing was recorded, so back off and retry. */
    Decision failed(Delivery delivery, String key, RuntimeException e) {
        Duration delay = retryDelay(consecutiveErrors.incrementAndGet());
        log.warn("{} - {} key {}: inbox transaction failed, retry in {}: {}", consumer, delivery.coordinates(),
                logKey(key), delay, keyLogs.redact(e.toString(), key));
        listener.onError(consumer, e);
        listener.onRetry(consumer, delay, e.toString());
        return new Decision.Retry(delay, e.toString());
    }

    /** An outcome the database settled: the listener hears it, and the error streak ends. */
    void heard(Outcome.Status status, Duration took) {
        answered();
        listener.onOutcome(consumer, status, took);
    }

    /** The database answered: the error streak ends. */
    void answered() {
        consecutiveErrors.set(0);
    }

    void deadLettered(Delivery delivery, String destination, String reason) {
        deadLetterFailures.set(0);
        log.info("{} - {}: dead-lettered to {}", consumer, delivery.coordinates(), destination);
        listener.onDeadLetter(consumer, reason);
    }

    Duration deadLetterFailed(Delivery delivery, Exception error) {
        Duration delay = retryDelay(deadLetterFailures.incrementAndGet());
        log.warn("{} - {}: dead-letter publish failed, retry in {}: {}", consumer, delivery.coordinates(), delay,
                error.toString());
        listener.onError(consumer, error);
        return delay;
    }

    Duration retryDelay(int attempt) {
        return backoff.delay(attempt, ThreadLocalRandom.current()::nextDouble);
    }

    /** The key as logs and the MDC show it: quoted, or hashed under {@code hashKeysInLogs}. */
    String logKey(String key) {
        return keyLogs.show(key);
    }
}
