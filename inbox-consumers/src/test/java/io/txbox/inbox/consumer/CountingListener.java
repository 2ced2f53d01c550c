package io.txbox.inbox.consumer;

import io.txbox.inbox.Outcome;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/** Counts what a consumer reports, for assertions. */
public final class CountingListener implements ConsumerListener {
    public final Map<Outcome.Status, AtomicInteger> outcomes = new ConcurrentHashMap<>();
    public final List<String> deadLetters = new CopyOnWriteArrayList<>();
    public final List<Duration> retries = new CopyOnWriteArrayList<>();
    public final AtomicInteger acks = new AtomicInteger();
    public final AtomicInteger errors = new AtomicInteger();

    @Override
    public void onOutcome(String consumer, Outcome.Status status, Duration took) {
        outcomes.computeIfAbsent(status, s -> new AtomicInteger()).incrementAndGet();
    }

    @Override
    public void onRetry(String consumer, Duration delay, String reason) {
        retries.add(delay);
    }

    @Override
    public void onDeadLetter(String consumer, String reason) {
        deadLetters.add(reason);
    }

    @Override
    public void onAck(String consumer, int count) {
        acks.addAndGet(count);
    }

    @Override
    public void onError(String consumer, Throwable error) {
        errors.incrementAndGet();
    }

    public int count(Outcome.Status status) {
        AtomicInteger n = outcomes.get(status);
        return n == null ? 0 : n.get();
    }
}
