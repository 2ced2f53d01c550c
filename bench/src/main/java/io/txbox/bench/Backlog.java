package io.txbox.bench;

import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * Writes outbox rows through {@link Outbox#sendAll}, {@code txSize} rows per transaction, on
 * several threads. Row {@code i} has step key {@code o<i>:relay} and routing key {@code
 * acct-<i mod 1000>}, so rows spread over every lane and Kafka partition.
 */
final class Backlog {
    static final String STEP = "relay";

    private Backlog() {}

    static OutboxMessage message(long i, String destination, byte[] payload) {
        return message(i, destination, payload, 1000);
    }

    /** Row {@code i} with routing key {@code acct-<i mod keys>}. */
    static OutboxMessage message(long i, String destination, byte[] payload, int keys) {
        return OutboxMessage.builder(StepKey.of("o" + i, STEP), destination)
                .routingKey("acct-" + (i % keys))
                // a fresh payload per row: identical ones would let the producer's compression flatter Kafka
                .payload(Scenario.payload(payload.length))
                .build();
    }

    /**
     * Inserts rows {@code [from, from + n)}; returns rows per second. {@code ratePerSec} &gt; 0
     * paces the writers; 0 writes as fast as the database takes it.
     */
    static double fill(DataSource ds, Outbox outbox, String destination, long from, long n, int threads, int txSize,
            byte[] payload, double ratePerSec, Timeline line) throws InterruptedException {
        return fill(ds, outbox, destination, from, n, threads, txSize, payload, ratePerSec, line, 1000);
    }

    /** {@link #fill} over {@code keys} routing keys. */
    static double fill(DataSource ds, Outbox outbox, String destination, long from, long n, int threads, int txSize,
            byte[] payload, double ratePerSec, Timeline line, int keys) throws InterruptedException {
        return fill(ds, outbox, destination, from, n, threads, txSize, payload, ratePerSec, line, keys, false);
    }

    /**
     * {@link #fill}; with {@code keyOwned}, each routing key is written by one thread only (thread
     * {@code t} writes rows {@code i} with {@code i mod threads == t}, in number order), so a key's
     * rows commit in number order and a per-key order check can compare their numbers. The
     * transactions, their sizes and their pacing are the same either way. {@code keyOwned} needs
     * {@code keys} to be a multiple of {@code threads}.
     */
    static double fill(DataSource ds, Outbox outbox, String destination, long from, long n, int threads, int txSize,
            byte[] payload, double ratePerSec, Timeline line, int keys, boolean keyOwned) throws InterruptedException {
        if (keyOwned && keys % threads != 0) {
            throw new IllegalArgumentException("key-owned writers need the " + keys + " keys to be a multiple of the "
                    + threads + " threads");
        }
        AtomicLong next = new AtomicLong();
        long end = from + n;
        List<Thread> workers = new ArrayList<>();
        AtomicLong failures = new AtomicLong();
        long t0 = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            Thread th = new Thread(() -> {
                List<OutboxMessage> batch = new ArrayList<>(txSize);
                for (long own = 0; ; own++) {
                    // the ordinal of this transaction among all the writers' (it sets the pace), its first row, and the step between rows
                    long ordinal = keyOwned ? own * threads + thread : next.getAndIncrement();
                    long first = keyOwned ? from + thread + own * txSize * threads : from + ordinal * txSize;
                    long stride = keyOwned ? threads : 1;
                    if (first >= end) {
                        return;
                    }
                    if (ratePerSec > 0) {
                        // pace: transaction `ordinal` is due at t0 + ordinal * txSize / rate
                        long due = t0 + (long) (ordinal * txSize / ratePerSec * 1e9);
                        long wait = due - System.nanoTime();
                        if (wait > 0) {
                            java.util.concurrent.locks.LockSupport.parkNanos(wait);
                        }
                    }
                    batch.clear();
                    for (long i = first; i < end && batch.size() < txSize; i += stride) {
                        batch.add(message(i, destination, payload, keys));
                    }
                    for (int attempt = 0; ; attempt++) {
                        try (Connection c = ds.getConnection()) {
                            c.setAutoCommit(false);
                            try {
                                if (batch.size() == 1) {
                                    outbox.send(c, batch.get(0));
                                } else {
                                    outbox.sendAll(c, batch);
                                }
                                c.commit();
                            } catch (SQLException | RuntimeException e) {
                                c.rollback();
                                throw e;
                            }
                            break;
                        } catch (SQLException | RuntimeException e) {
                            // a fault-injection run breaks connections on purpose: write the batch again
                            if (failures.incrementAndGet() % 100 == 1) {
                                System.err.println("outbox write failed (retrying): " + e);
                            }
                            if (attempt > 1000) {
                                throw new IllegalStateException("outbox write keeps failing", e);
                            }
                            sleep(50);
                        }
                    }
                    if (line != null) {
                        line.record(batch.size());
                    }
                }
            }, "writer-" + t);
            th.start();
            workers.add(th);
        }
        for (Thread th : workers) {
            th.join();
        }
        return n / ((System.nanoTime() - t0) / 1e9);
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
