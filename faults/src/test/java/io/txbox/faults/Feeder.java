package io.txbox.faults;

import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * Emits outbox rows in small committed transactions on a background thread, so that rows keep
 * arriving while a fault is injected. Remembers every step key it emitted.
 */
final class Feeder implements AutoCloseable {
    private final Set<String> emitted = ConcurrentHashMap.newKeySet();
    private final Thread thread;
    private volatile RuntimeException failure;

    Feeder(DataSource ds, Outbox outbox, String prefix, String destination, int total, int perTransaction,
            Duration pause) {
        thread = new Thread(() -> {
            try {
                for (int i = 0; i < total; ) {
                    List<OutboxMessage> chunk = new ArrayList<>();
                    for (int j = 0; j < perTransaction && i < total; j++, i++) {
                        chunk.add(OutboxMessage.builder(StepKey.of(prefix + "-" + i, "ship"), destination)
                                .routingKey("r" + (i % 16)).payload("{\"n\":" + i + "}").build());
                    }
                    try (Connection c = ds.getConnection()) {
                        c.setAutoCommit(false);
                        outbox.sendAll(c, chunk);
                        c.commit();
                    }
                    chunk.forEach(m -> emitted.add(m.stepKey().value()));
                    Thread.sleep(pause.toMillis());
                }
            } catch (SQLException | RuntimeException e) {
                failure = new IllegalStateException("feeder failed: " + e, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "feeder-" + prefix);
        thread.setDaemon(true);
        thread.start();
    }

    /** Waits until everything was emitted and returns the step keys. */
    Set<String> finish(Duration timeout) throws InterruptedException {
        thread.join(timeout.toMillis());
        if (thread.isAlive()) {
            throw new IllegalStateException("feeder still running after " + timeout);
        }
        if (failure != null) {
            throw failure;
        }
        return Set.copyOf(emitted);
    }

    int emittedSoFar() {
        return emitted.size();
    }

    /**
     * Waits until {@code rows} more rows were emitted (or the feeder has emitted everything):
     * an outage then certainly overlaps with rows arriving in the outbox.
     */
    void awaitMore(int rows, Duration timeout) {
        int target = emittedSoFar() + rows;
        org.awaitility.Awaitility.await().atMost(timeout).pollInterval(Duration.ofMillis(10))
                .until(() -> emittedSoFar() >= target || !thread.isAlive());
    }

    @Override
    public void close() {
        thread.interrupt();
    }
}
