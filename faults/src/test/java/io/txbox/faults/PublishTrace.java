package io.txbox.faults;

import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;

/**
 * A publisher that records what the relay handed it and what the broker answered, in order, so
 * that an order violation on the broker shows whether the relay sent the rows out of order or
 * the broker reordered them.
 */
final class PublishTrace implements Publisher {
    private final Publisher delegate;
    private final long started = System.nanoTime();
    private final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();

    PublishTrace(Publisher delegate) {
        this.delegate = delegate;
    }

    @Override
    public String broker() {
        return delegate.broker();
    }

    @Override
    public CompletionStage<Void> publish(String target, PublishRecord record) {
        String what = new String(record.payload(), StandardCharsets.UTF_8) + " id " + record.id() + " attempt "
                + record.attempts();
        event("send " + what);
        return delegate.publish(target, record).whenComplete((v, e) -> event((e == null ? "ok " : "failed (" + e + ") ") + what));
    }

    private void event(String what) {
        events.add((System.nanoTime() - started) / 1_000_000 + " ms [" + Thread.currentThread().getName() + "] " + what);
    }

    /** The events that mention {@code key}'s payload, in the order they happened. */
    String of(String key) {
        String needle = "\"key\":\"" + key + "\"";
        List<String> mine = events.stream().filter(e -> e.contains(needle)).collect(Collectors.toList());
        return String.join("\n", mine);
    }

    @Override
    public void endOfBatch() {
        delegate.endOfBatch();
    }

    @Override
    public void check(Duration timeout) {
        delegate.check(timeout);
    }

    @Override
    public void checkTarget(String target, Duration timeout) {
        delegate.checkTarget(target, timeout);
    }

    @Override
    public void close() {
        delegate.close();
    }
}
