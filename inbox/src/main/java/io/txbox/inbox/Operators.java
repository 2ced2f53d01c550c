package io.txbox.inbox;

import io.txbox.internal.Args;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/** The operator calls (dead entries, reset) and retention (purge, the retention thread). */
final class Operators {
    private final InboxCore core;
    private final InboxStore store;

    Operators(InboxCore core) {
        this.core = core;
        this.store = core.store;
    }

    boolean resetDead(DataSource ds, String key, @Nullable String tenant) {
        Args.notNull(ds, "ds");
        Args.notNull(key, "key");
        Scope s = core.scope(key, tenant);
        boolean reset = core.inOwnTransaction(ds, core.what("reset dead", s), c -> store.resetDead(c, s));
        if (reset) {
            InboxCore.log.info("{} - key {} reset from DEAD: the next delivery runs again", core.consumer, s.label());
        }
        return reset;
    }

    List<DeadEntry> listDead(DataSource ds, int limit) {
        Args.notNull(ds, "ds");
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, but was " + limit);
        }
        return core.inOwnTransaction(ds, core.consumer + " - list dead entries",
                c -> store.listDead(c, core.consumer, limit));
    }

    int purgeCompleted(DataSource ds) {
        Args.notNull(ds, "ds");
        OffsetDateTime cutoff = OffsetDateTime.ofInstant(core.clock.instant().minus(core.retention), ZoneOffset.UTC);
        int total = 0;
        int batch;
        do {
            batch = core.inOwnTransaction(ds, core.consumer + " - purge completed entries",
                    c -> store.purgeBatch(c, core.consumer, cutoff));
            total += batch;
        } while (batch == store.purgeBatchSize());
        if (total > 0) {
            InboxCore.log.info("{} - purged {} completed entries older than {} (retention {})", core.consumer, total,
                    cutoff, core.retention);
        }
        return total;
    }

    RetentionTask retentionTask(DataSource ds, Duration every) {
        Args.notNull(ds, "ds");
        Args.notNull(every, "every");
        if (every.isNegative() || every.isZero()) {
            throw new IllegalArgumentException("every must be positive, but was " + every);
        }
        return new Retention(ds, every);
    }

    private final class Retention implements RetentionTask {
        private final ScheduledExecutorService executor;
        private final AtomicLong purged = new AtomicLong();

        Retention(DataSource ds, Duration every) {
            executor = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "txbox-inbox-retention-" + core.consumer);
                t.setDaemon(true);
                return t;
            });
            executor.scheduleWithFixedDelay(() -> {
                try {
                    purged.addAndGet(purgeCompleted(ds));
                } catch (RuntimeException e) {
                    InboxCore.log.warn("{} - retention run failed, trying again in {}: {}", core.consumer, every,
                            e.toString());
                }
            }, 0, every.toNanos(), TimeUnit.NANOSECONDS);
        }

        @Override
        public long purged() {
            return purged.get();
        }

        @Override
        public void close() {
            executor.shutdown();
            try {
                if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
                    executor.shutdownNow();
                }
            } catch (InterruptedException e) {
                executor.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
    }
}
