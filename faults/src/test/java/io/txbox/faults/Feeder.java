package io.txbox.faults;

import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.testkit.KeyOrder;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Emits outbox rows in small committed transactions on background threads, so that rows keep
 * arriving while a fault is injected. Remembers every step key it emitted.
 *
 * <p>Row {@code i} has routing key {@code r<i % 16>} and the payload {@code {"key":"r..","n":i}}.
 * {@value #WRITERS} writers, each on its own connection, share the rows: each routing key belongs
 * to one writer, which emits its rows in ascending {@code i}, committing each transaction before
 * it begins the next. The writers' transactions overlap, so ids are taken in one order and
 * committed in another, while each key's rows come from strictly sequential transactions: the
 * order the relay promises to keep, which {@link #keyOrder} checks.
 */
final class Feeder implements AutoCloseable {
    static final int KEYS = 16;
    static final int WRITERS = 4;
    private static final Pattern PAYLOAD = Pattern.compile("\\{\"key\":\"([^\"]+)\",\"n\":(\\d+)}");

    private final Set<String> emitted = ConcurrentHashMap.newKeySet();
    private final List<Thread> threads = new ArrayList<>();
    private volatile RuntimeException failure;

    /** Rows {@code 0..total-1}, {@code perTransaction} per transaction; each writer pauses {@code pause} times the writers between its transactions. */
    Feeder(DataSource ds, Outbox outbox, String prefix, String destination, int total, int perTransaction,
            Duration pause) {
        this(ds, outbox, prefix, destination, 0, total, perTransaction, pause);
    }

    /** Rows {@code from..from+count-1}, otherwise as above. */
    Feeder(DataSource ds, Outbox outbox, String prefix, String destination, int from, int count, int perTransaction,
            Duration pause) {
        int total = from + count;
        for (int w = 0; w < WRITERS; w++) {
            int writer = w;
            Thread thread = new Thread(() -> {
                try (Connection c = ds.getConnection()) {
                    c.setAutoCommit(false);
                    int i = from;
                    while (i < total) {
                        List<OutboxMessage> chunk = new ArrayList<>();
                        for (; chunk.size() < perTransaction && i < total; i++) {
                            if (i % KEYS % WRITERS == writer) {
                                chunk.add(message(prefix, destination, i));
                            }
                        }
                        if (chunk.isEmpty()) {
                            break;
                        }
                        outbox.sendAll(c, chunk);
                        c.commit();
                        chunk.forEach(m -> emitted.add(m.stepKey().value()));
                        Thread.sleep(pause.toMillis() * WRITERS); // together, the writers keep the given pace
                    }
                } catch (SQLException | RuntimeException e) {
                    failure = new IllegalStateException("feeder failed: " + e, e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "feeder-" + prefix + "-" + w);
            thread.setDaemon(true);
            threads.add(thread);
        }
        threads.forEach(Thread::start);
    }

    static OutboxMessage message(String prefix, String destination, int i) {
        String key = "r" + (i % KEYS);
        return OutboxMessage.builder(StepKey.of(prefix + "-" + i, "ship"), destination).routingKey(key)
                .payload("{\"key\":\"" + key + "\",\"n\":" + i + "}").build();
    }

    /** Feeds one payload of {@link #message}'s shape to {@code order}: its routing key and its number. */
    static void add(KeyOrder order, String payload) {
        Matcher m = PAYLOAD.matcher(payload);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a feeder payload: " + payload);
        }
        order.add(m.group(1), Long.parseLong(m.group(2)));
    }

    /** The per-key order oracle fed {@link #message} payloads in arrival order. */
    static KeyOrder keyOrder(List<String> payloads) {
        KeyOrder order = new KeyOrder();
        payloads.forEach(p -> add(order, p));
        return order;
    }

    /** Waits until everything was emitted and returns the step keys. */
    Set<String> finish(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Thread t : threads) {
            t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            if (t.isAlive()) {
                throw new IllegalStateException("feeder still running after " + timeout);
            }
        }
        if (failure != null) {
            throw failure;
        }
        return Set.copyOf(emitted);
    }

    int emittedSoFar() {
        return emitted.size();
    }

    /** Whether any writer still emits rows. */
    boolean running() {
        return threads.stream().anyMatch(Thread::isAlive);
    }

    /**
     * Waits until {@code rows} more rows were emitted (or the feeder has emitted everything):
     * an outage then certainly overlaps with rows arriving in the outbox.
     */
    void awaitMore(int rows, Duration timeout) {
        int target = emittedSoFar() + rows;
        org.awaitility.Awaitility.await().atMost(timeout).pollInterval(Duration.ofMillis(10))
                .until(() -> emittedSoFar() >= target || !running());
    }

    @Override
    public void close() {
        threads.forEach(Thread::interrupt);
    }
}
