package io.txbox.relay.internal;

import io.txbox.internal.SqlErrors;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.Relay;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * One relay worker: a lane-holding member ({@link LaneOwnership}) with its own connection and
 * thread, running batch transactions back to back while there is work and polling otherwise. A
 * transaction: lock the lanes, claim ({@link RelayStore#claim}, above the worker's {@link
 * ClaimFloor}), publish ({@link BatchPublisher}),
 * settle ({@link BatchSettler}), commit; while the broker confirms a batch, the same transaction
 * claims the next one, which is published while the first is settled ({@link #batch}).
 */
final class Worker implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);
    /**
     * Waits after a wake-up (or, when listening, after a batch that found rows) before falling back
     * to the poll: the sender's commit may still be under way, and a busy sender's next rows come
     * within milliseconds.
     */
    private static final int[] WAKE_STEPS_MILLIS = {1, 2, 4, 8, 16, 32, 64};
    private static final long MAX_ERROR_PAUSE_MILLIS = 5_000;
    /**
     * Batches one transaction publishes at most before it commits: bounds how long the lanes stay
     * locked and how many published rows a crash sends again.
     */
    private static final int MAX_CHAINED_BATCHES = 8;

    private final RelayEngine engine;
    private final RelaySettings settings;
    private final RelayStore store;
    private final BatchPublisher publisher;
    private final BatchSettler settler;
    private final LaneOwnership lanes;
    private final ClaimFloor floor = new ClaimFloor();
    private final LongSupplier ticker;
    private final String memberId;

    private volatile @Nullable Connection connection;
    private int errorStreak;

    private final Object signal = new Object();
    private boolean woken;
    private int wakeStep = -1;

    Worker(RelayEngine engine, int index) {
        this.engine = engine;
        this.settings = engine.settings();
        this.store = engine.store();
        this.ticker = settings.ticker();
        this.memberId = memberId(settings.relayId(), index);
        this.publisher = new BatchPublisher(settings.routes(), settings.publishTimeout(), engine.waits(), ticker,
                settings::parks);
        this.settler = new BatchSettler(store, memberId, settings.maxAttempts(), settings.backoff(), settings.random(),
                settings::parks);
        List<String> relayWorkers = new ArrayList<>(settings.workers());
        for (int i = 0; i < settings.workers(); i++) {
            relayWorkers.add(memberId(settings.relayId(), i));
        }
        this.lanes = new LaneOwnership(store.lanes(), memberId, relayWorkers, settings.laneLease(), ticker);
    }

    static String memberId(String relayId, int index) {
        return relayId + "-w" + index;
    }

    String memberId() {
        return memberId;
    }

    int ownedCount() {
        return lanes.count();
    }

    @Override
    public void run() {
        MDC.put(Relay.MDC_KEY, settings.relayId());
        try {
            log.debug("{} - started", memberId);
            while (engine.running()) {
                try {
                    Connection c = connection();
                    rebalanceIfDue(c);
                    int claimed = batch(c);
                    errorStreak = 0;
                    engine.tablesPresent();
                    if (claimed > 0) {
                        // more rows may be waiting (an empty claim costs one round trip); a listening
                        // relay also takes the wake steps after rows: senders notify at most once per
                        // 10 ms, and the rows sent in between come right after the notified one
                        afterRows();
                        continue;
                    }
                    idle();
                } catch (Exception e) {
                    onError(e);
                }
            }
            leave();
            log.debug("{} - stopped", memberId);
        } finally {
            MDC.remove(Relay.MDC_KEY);
        }
    }

    private void rebalanceIfDue(Connection c) throws SQLException {
        try {
            lanes.rebalanceIfDue(c);
        } catch (SQLException | RuntimeException e) {
            rollbackQuietly(c);
            throw e;
        }
    }

    /**
     * One batch transaction; returns the rows claimed. While a batch waits for its broker
     * confirmations the transaction claims the next rows after it ({@link RelayStore#claimAfter}),
     * and settles the batch while that next one is on the wire, so the database and the broker
     * work at the same time. The next batch is sent only once every row before it is confirmed or
     * dead-lettered; otherwise it stays unsent in the outbox (its claim ends with the commit), so
     * no row overtakes an earlier one of its lane. The lanes stay locked, with their fence, from
     * the first claim to the commit.
     */
    private int batch(Connection c) throws SQLException {
        if (lanes.count() == 0) {
            return 0;
        }
        long started = ticker.getAsLong();
        List<Short> open;
        RelayStore.Claimed claimed = null;
        long from = 0;
        try {
            open = lanes.lock(c);
            if (!open.isEmpty()) {
                List<String> paused = engine.waits().paused();
                floor.holdsFrom(lanes.heldFrom());
                from = floor.claimAbove(open, !paused.isEmpty(), started);
                claimed = from == 0
                        ? store.claim(c, open, settings.batchSize(), paused)
                        : store.claimAfter(c, open, settings.batchSize(), paused, from, null);
            }
            if (claimed == null || claimed.rows().isEmpty()) {
                c.commit();
            }
        } catch (SQLException | RuntimeException e) {
            rollbackQuietly(c);
            throw e;
        }
        if (claimed == null) {
            return 0;
        }
        if (claimed.rows().isEmpty()) {
            floor.committed(0, true, true);
            sampleWriters(c);
            return 0;
        }
        List<Settled> settled = new ArrayList<>(2);
        int total = 0;
        BatchPublisher.Sent unconfirmed = null;
        boolean reachedEnd = claimed.rows().size() < settings.batchSize();
        try {
            RelayStore.Claimed current = claimed;
            BatchPublisher.Sent sent = publisher.send(current.rows());
            unconfirmed = sent;
            while (true) {
                RelayStore.Claimed next = settled.size() + 1 < MAX_CHAINED_BATCHES && chainable()
                        ? store.claimAfter(c, open, settings.batchSize(), engine.waits().paused(), lastId(current),
                                new RelayStore.Chain(from, current.rows().size(), claimed.dueBy()))
                        : null;
                long claimedAt = ticker.getAsLong();
                BatchPublisher.Result result = publisher.await(sent);
                unconfirmed = null;
                long publishedAt = ticker.getAsLong();
                reachedEnd |= next != null && next.rows().size() < settings.batchSize();
                boolean sendNext = next != null && !next.rows().isEmpty() && result.clean();
                BatchPublisher.Sent nextSent = sendNext ? publisher.send(next.rows()) : null;
                unconfirmed = nextSent;
                long sentAt = ticker.getAsLong();
                settler.settle(c, current.rows(), current.lanes(), result.outcomes(), lanes.heldFrom() > 0);
                settled.add(new Settled(current.rows(), result));
                total += current.rows().size();
                if (log.isDebugEnabled()) {
                    // claim: this batch's lock, claim and send for the first of a transaction, then the
                    // next batch's claim; confirm wait: what was left of this batch's confirmations
                    // after it; send: of the next batch, which the broker then has while this one is settled
                    log.debug("{} - batch of {}: claim {} us, confirm wait {} us, send {} us, settle {} us{}", memberId,
                            current.rows().size(), (claimedAt - started) / 1000, (publishedAt - claimedAt) / 1000,
                            (sentAt - publishedAt) / 1000, (ticker.getAsLong() - sentAt) / 1000,
                            sendNext ? ", next batch sent" : "");
                }
                if (nextSent == null) {
                    break;
                }
                started = ticker.getAsLong();
                current = next;
                sent = nextSent;
            }
            c.commit();
            floor.committed(lastId(current), reachedEnd, settled.stream().allMatch(s -> s.result().clean()));
        } catch (SQLException | RuntimeException e) {
            if (unconfirmed != null) {
                // the rows are sent again only after the broker answered for these ones
                publisher.await(unconfirmed);
            }
            // nothing was deleted: every row stays in the outbox and is published again later
            rollbackQuietly(c);
            throw e;
        }
        for (Settled s : settled) {
            engine.batchDone(s.rows(), s.result().outcomes(), s.result().latencyNanos());
        }
        sampleWriters(c);
        return total;
    }

    /**
     * Tells the {@link ClaimFloor} which transactions write to the outbox, in a transaction of
     * its own after the batch's commit: the floor needs the sample to follow every claim before it
     * and to precede every claim after it.
     */
    private void sampleWriters(Connection c) throws SQLException {
        long now = ticker.getAsLong();
        if (!floor.sampleDue(now)) {
            return;
        }
        try {
            Set<String> writers = store.outboxWriters(c);
            c.commit();
            floor.sampled(writers, now);
        } catch (SQLException | RuntimeException e) {
            rollbackQuietly(c);
            throw e;
        }
    }

    /**
     * Whether this transaction may claim one more batch: not while stopping, and not once the
     * lanes' lease is due for renewal or a rebalance is due, both of which happen between
     * transactions.
     */
    private boolean chainable() {
        return engine.running() && !lanes.due();
    }

    private static long lastId(RelayStore.Claimed claimed) {
        List<PublishRecord> rows = claimed.rows();
        return rows.get(rows.size() - 1).id();
    }

    private record Settled(List<PublishRecord> rows, BatchPublisher.Result result) {}

    private Connection connection() throws SQLException {
        Connection c = connection;
        if (c != null) {
            return c;
        }
        c = settings.dataSource().getConnection();
        try {
            c.setAutoCommit(false);
            store.prepareSession(c, settings.laneLease());
            c.commit();
        } catch (SQLException | RuntimeException e) {
            closeQuietly(c);
            throw e;
        }
        connection = c;
        return c;
    }

    private void onError(Exception e) {
        errorStreak++;
        Exception translated = e instanceof SQLException ? SqlErrors.translate("relay batch", e) : e;
        engine.error(translated);
        long pause = Math.min(MAX_ERROR_PAUSE_MILLIS, 100L << Math.min(errorStreak - 1, 10));
        if (store.isUndefinedTable(e)) {
            engine.tablesMissing(); // one clear line for the whole relay, not a stack trace per poll
        } else if (errorStreak == 1 || errorStreak % 20 == 0) {
            log.warn("{} - {} (attempt {} in a row), reconnecting in {} ms", memberId, translated.getMessage(),
                    errorStreak, pause, e);
        }
        Connection c = connection;
        connection = null;
        if (c != null) {
            closeQuietly(c);
        }
        lanes.rebalanceSoon(); // re-read ownership after reconnecting
        floor.reset(); // a failed or lost commit may have left rows below it
        pause(pause);
    }

    private void idle() {
        synchronized (signal) {
            if (woken) {
                woken = false;
                wakeStep = 0;
                return;
            }
            long waitMillis;
            if (wakeStep >= 0 && wakeStep < WAKE_STEPS_MILLIS.length) {
                waitMillis = Math.min(WAKE_STEPS_MILLIS[wakeStep++], settings.pollInterval().toMillis());
            } else {
                wakeStep = -1;
                // a long poll interval must not let the lane leases lapse or delay taking over lanes
                waitMillis = Math.min(settings.pollInterval().toMillis(), lanes.nanosUntilDue() / 1_000_000L);
            }
            waitOn(waitMillis);
            if (woken) {
                woken = false;
                wakeStep = 0;
            }
        }
    }

    private void afterRows() {
        synchronized (signal) {
            wakeStep = engine.listening() ? 0 : -1;
        }
    }

    private void pause(long millis) {
        synchronized (signal) {
            waitOn(millis);
            woken = false;
        }
    }

    /** A real-time wait (not the ticker's): it blocks this thread until woken, stopped or {@code millis} passed. */
    private void waitOn(long millis) {
        long end = System.nanoTime() + millis * 1_000_000L;
        try {
            long left;
            while (!woken && engine.running() && (left = end - System.nanoTime()) > 0) {
                signal.wait(Math.max(1, left / 1_000_000L));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    void wake() {
        synchronized (signal) {
            woken = true;
            signal.notifyAll();
        }
    }

    /** Closes this worker's connection and releases its lanes and membership. */
    private void leave() {
        // an overrunning batch is stopped by abort() plus an interrupt; the release must still run
        boolean interrupted = Thread.interrupted();
        Connection used = connection;
        connection = null;
        if (used != null) {
            closeQuietly(used);
        }
        try {
            lanes.leave(settings.dataSource());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Last resort at shutdown: breaks the connection of a batch that overran, rolling it back. */
    void abort() {
        Connection c = connection;
        if (c != null) {
            try {
                c.abort(Runnable::run);
            } catch (SQLException | RuntimeException e) {
                log.debug("{} - abort failed: {}", memberId, e.toString());
            }
        }
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException | RuntimeException ignored) {
            // the connection is discarded by the caller
        }
    }

    private void closeQuietly(Connection c) {
        try {
            if (!c.isClosed() && !c.getAutoCommit()) {
                c.rollback();
            }
            store.resetSession(c);
            c.setAutoCommit(true);
        } catch (SQLException | RuntimeException ignored) {
            // broken connections are evicted by the pool
        }
        try {
            c.close();
        } catch (SQLException | RuntimeException ignored) {
            // nothing more to do
        }
    }
}
