package io.txbox.relay.internal;

import io.txbox.Texts;
import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import io.txbox.relay.Route;
import io.txbox.relay.TargetNotFoundException;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * Publishes one claimed batch through the routes and waits, at most the publish timeout, for
 * every confirmation. The only place that talks to a {@link Publisher}; broker-independent.
 */
final class BatchPublisher {
    private final Map<String, Route> routes;
    private final long timeoutNanos;
    private final DestinationWaits waits;
    private final LongSupplier ticker;
    private final Predicate<String> parks;

    /**
     * {@code ticker} measures the latency; the publish timeout is a wait, so it runs on real time.
     * {@code parks} tells the destinations whose dead-lettered rows park their key.
     */
    BatchPublisher(Map<String, Route> routes, Duration publishTimeout, DestinationWaits waits, LongSupplier ticker,
            Predicate<String> parks) {
        this.routes = routes;
        this.timeoutNanos = publishTimeout.toNanos();
        this.waits = waits;
        this.ticker = ticker;
        this.parks = parks;
    }

    /** A routing key in its destination; null for a row without one, which nothing holds behind. */
    static @Nullable String key(PublishRecord row) {
        return row.routingKey() == null ? null : row.destination() + '\n' + row.routingKey();
    }

    /** Whether a row with outcome {@code o} holds back its key's later rows: it stays, or its key parks. */
    private boolean holdsKey(RowOutcome o, String destination) {
        return o.kind() == RowOutcome.Kind.RETRY || o.kind() == RowOutcome.Kind.PERMANENT && parks.test(destination);
    }

    /**
     * Hands every row of the batch to its publisher and returns without waiting for the broker,
     * so the worker can use the database meanwhile; {@link #await} completes it. The batches of
     * one worker are sent and awaited strictly one after the other.
     */
    Sent send(List<PublishRecord> rows) {
        int n = rows.size();
        RowOutcome[] outcomes = new RowOutcome[n];
        boolean[] skipped = new boolean[n];
        @SuppressWarnings("unchecked")
        CompletableFuture<Void>[] futures = new CompletableFuture[n];
        Set<Publisher> used = new LinkedHashSet<>();
        long started = ticker.getAsLong();
        long deadline = System.nanoTime() + timeoutNanos;
        // keys (routing key in its destination) whose send already failed in this batch: their later
        // rows are held back, so a row of the same key cannot overtake the failed one (for example,
        // the first send timing out on metadata while the broker restarts and the next ones going
        // through); the other keys of the lane go on
        Set<String> failedKeys = null;
        // a batch is mostly one destination: its route is looked up once per run of equal destinations
        String lastDestination = null;
        Route route = null;
        Publisher lastUsed = null;
        for (int i = 0; i < n; i++) {
            PublishRecord row = rows.get(i);
            if (!row.destination().equals(lastDestination)) {
                lastDestination = row.destination();
                route = routes.get(lastDestination);
            }
            String key = key(row);
            if (key != null && failedKeys != null && failedKeys.contains(key)) {
                outcomes[i] = RowOutcome.held("held back: an earlier row of its routing key failed in the same batch");
                continue;
            }
            if (route == null) {
                // every row of the destination is dead-lettered, in id order: no key of it parks
                outcomes[i] = RowOutcome.noRoute("no route configured for destination " + Texts.quote(row.destination()));
                continue;
            }
            if (waits.paused(row.destination())) {
                // claimed just before another worker found the target missing
                outcomes[i] = RowOutcome.waiting(String.valueOf(waits.reason(row.destination())));
                skipped[i] = true;
                continue;
            }
            if (System.nanoTime() - deadline > 0) {
                // the broker pushed back for the whole timeout; the rest of the batch is retried later
                outcomes[i] = RowOutcome.retry("publish timeout (" + Duration.ofNanos(timeoutNanos) + ") before the message was sent");
                continue;
            }
            if (route.publisher() != lastUsed) {
                lastUsed = route.publisher();
                used.add(lastUsed);
            }
            try {
                CompletableFuture<Void> f = route.publisher().publish(route.target(), row).toCompletableFuture();
                if (f.isCompletedExceptionally()) {
                    outcomes[i] = classify(f.handle((v, e) -> e).join());
                } else {
                    futures[i] = f;
                }
            } catch (RuntimeException e) {
                outcomes[i] = classify(e);
            }
            if (key != null && outcomes[i] != null && holdsKey(outcomes[i], row.destination())) {
                failedKeys = failedKeys == null ? new HashSet<>() : failedKeys;
                failedKeys.add(key);
            }
        }
        return new Sent(rows, outcomes, skipped, futures, used, started, deadline);
    }

    /**
     * Waits, at most until the publish timeout counted from the send, for every confirmation of
     * {@code sent}: RowOutcomes in the order of its rows; {@link Result#latencyNanos} spans first
     * send to last confirmation.
     */
    Result await(Sent sent) {
        RowOutcome[] outcomes = sent.outcomes;
        CompletableFuture<Void>[] futures = sent.futures;
        int n = outcomes.length;
        long deadline = sent.deadline;
        for (Publisher p : sent.used) {
            try {
                p.endOfBatch();
            } catch (RuntimeException e) {
                // the per-record stages report what failed
            }
        }
        for (int i = 0; i < n; i++) {
            if (futures[i] == null) {
                continue;
            }
            long remaining = deadline - System.nanoTime();
            try {
                futures[i].get(Math.max(remaining, 0), TimeUnit.NANOSECONDS);
                outcomes[i] = RowOutcome.CONFIRMED;
            } catch (TimeoutException e) {
                outcomes[i] = RowOutcome.retry("no broker confirmation within the publish timeout ("
                        + Duration.ofNanos(timeoutNanos) + ")");
            } catch (ExecutionException e) {
                outcomes[i] = classify(e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                outcomes[i] = RowOutcome.retry("relay interrupted while waiting for the broker");
            }
        }
        trackWaits(sent.rows, outcomes, sent.skipped);
        return new Result(outcomes, ticker.getAsLong() - sent.started);
    }

    /** A target the broker found missing pauses its destination; a confirmed publish ends the pause. */
    private void trackWaits(List<PublishRecord> rows, RowOutcome[] outcomes, boolean[] skipped) {
        Map<String, String> missing = null;
        Set<String> confirmed = null;
        String lastConfirmed = null;
        for (int i = 0; i < outcomes.length; i++) {
            String destination = rows.get(i).destination();
            if (outcomes[i].kind() == RowOutcome.Kind.WAIT && !skipped[i]) {
                if (missing == null) {
                    missing = new LinkedHashMap<>();
                }
                missing.putIfAbsent(destination, outcomes[i].error());
            } else if (outcomes[i].kind() == RowOutcome.Kind.CONFIRMED && !destination.equals(lastConfirmed)) {
                if (confirmed == null) {
                    confirmed = new LinkedHashSet<>();
                }
                confirmed.add(destination);
                lastConfirmed = destination;
            }
        }
        if (missing != null) {
            missing.forEach(waits::missing);
        }
        if (confirmed != null) {
            for (String destination : confirmed) {
                if (missing == null || !missing.containsKey(destination)) {
                    waits.found(destination);
                }
            }
        }
    }

    static RowOutcome classify(Throwable e) {
        Throwable t = e;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        String text = describe(t);
        if (t instanceof TargetNotFoundException) {
            return RowOutcome.waiting(text);
        }
        if (t instanceof PublishException pe && !pe.retryable()) {
            return RowOutcome.permanent(text);
        }
        return RowOutcome.retry(text);
    }

    static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null && sb.length() < RowOutcome.MAX_ERROR_CHARS; c = c.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- ");
            }
            sb.append(c instanceof PublishException ? "" : c.getClass().getSimpleName() + ": ").append(c.getMessage());
            if (c.getCause() == c) {
                break;
            }
        }
        return RowOutcome.clip(sb.toString());
    }

    record Result(RowOutcome[] outcomes, long latencyNanos) {
        /**
         * Whether every row was confirmed. Only then may a later batch of the same lanes be sent
         * before this one commits: no row of it stays behind, and no key of it is held or parked
         * by this batch (a later batch claimed before the hold was written would not know it).
         */
        boolean clean() {
            for (RowOutcome o : outcomes) {
                if (o.kind() != RowOutcome.Kind.CONFIRMED) {
                    return false;
                }
            }
            return true;
        }
    }

    /** A batch handed to the publishers: the outcomes known at send time and a future for each other row. */
    static final class Sent {
        private final List<PublishRecord> rows;
        private final RowOutcome[] outcomes;
        private final boolean[] skipped;
        private final CompletableFuture<Void>[] futures;
        private final Set<Publisher> used;
        private final long started;
        private final long deadline;

        private Sent(List<PublishRecord> rows, RowOutcome[] outcomes, boolean[] skipped, CompletableFuture<Void>[] futures,
                Set<Publisher> used, long started, long deadline) {
            this.rows = rows;
            this.outcomes = outcomes;
            this.skipped = skipped;
            this.futures = futures;
            this.used = used;
            this.started = started;
            this.deadline = deadline;
        }
    }
}
