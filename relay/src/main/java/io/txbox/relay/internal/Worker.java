package io.txbox.relay.internal;

import io.txbox.internal.SqlErrors;
import io.txbox.outbox.Lanes;
import io.txbox.relay.PublishRecord;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One relay worker: a lane-holding member with its own connection and thread, running batch
 * transactions back to back while there is work and polling otherwise.
 */
final class Worker implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);
    /** Waits after a wake-up before falling back to the poll: the sender's commit may still be under way. */
    private static final int[] WAKE_STEPS_MILLIS = {1, 2, 4, 8, 16, 32, 64};
    private static final long MAX_ERROR_PAUSE_MILLIS = 5_000;

    private final RelayEngine engine;
    private final RelaySettings settings;
    private final OutboxClaims claims;
    private final BatchPublisher publisher;
    private final Backoff backoff;
    private final String memberId;
    /** This relay's workers, this one among them: counted as live from the start. */
    private final List<String> relayWorkers;
    private final long rebalanceNanos;
    private final long renewNanos;

    /** Lanes held, with the fence each was taken at; only this worker's thread touches it. */
    private final Map<Short, Long> owned = new LinkedHashMap<>();
    private volatile @Nullable Connection connection;
    private boolean lanesInitialised;
    private long nextRebalance;
    private long lastRenew = System.nanoTime() - Long.MAX_VALUE / 2;
    private int errorStreak;
    private int rebalances;
    /** Live members seen by the last batch; a change triggers a rebalance right away. */
    private int seenMembers = -1;

    private final Object signal = new Object();
    private boolean woken;
    private int wakeStep = -1;
    private volatile int ownedCount;

    Worker(RelayEngine engine, int index) {
        this.engine = engine;
        this.settings = engine.settings();
        this.claims = engine.claims();
        this.publisher = new BatchPublisher(settings.routes(), settings.publishTimeout(), engine.waits());
        this.backoff = new Backoff(settings.initialBackoff(), settings.maxBackoff(), () -> ThreadLocalRandom.current().nextDouble());
        this.memberId = memberId(settings.relayId(), index);
        List<String> all = new ArrayList<>(settings.workers());
        for (int i = 0; i < settings.workers(); i++) {
            all.add(memberId(settings.relayId(), i));
        }
        this.relayWorkers = List.copyOf(all);
        this.rebalanceNanos = Math.max(settings.laneLease().toNanos() / 6, 50_000_000L);
        this.renewNanos = settings.laneLease().toNanos() / 4;
        this.nextRebalance = System.nanoTime();
    }

    static String memberId(String relayId, int index) {
        return relayId + "-w" + index;
    }

    String memberId() {
        return memberId;
    }

    int ownedCount() {
        return ownedCount;
    }

    @Override
    public void run() {
        log.debug("{} - started", memberId);
        while (engine.running()) {
            try {
                Connection c = connection();
                long now = System.nanoTime();
                if (now - nextRebalance >= 0) {
                    boolean belowShare = rebalance(c);
                    // right after start, or while lanes this worker should hold are still leased to a
                    // member that is about to release them or whose lease is about to end: look again soon
                    boolean soon = ++rebalances < 8 || belowShare;
                    nextRebalance = System.nanoTime() + (soon ? Math.min(rebalanceNanos, 250_000_000L) : rebalanceNanos);
                }
                int claimed = batch(c);
                errorStreak = 0;
                engine.tablesPresent();
                if (claimed > 0) {
                    resetWake();
                    continue; // more rows may be waiting; an empty claim costs one round trip
                }
                idle();
            } catch (Exception e) {
                onError(e);
            }
        }
        leave();
        log.debug("{} - stopped", memberId);
    }

    /** One batch transaction; returns the rows claimed. */
    private int batch(Connection c) throws SQLException {
        if (owned.isEmpty()) {
            return 0;
        }
        long started = System.nanoTime();
        boolean renew = started - lastRenew >= renewNanos;
        Map<Short, Boolean> held;
        List<PublishRecord> rows;
        short[] lanes;
        try {
            OutboxClaims.Locked locked = claims.lockLanes(c, memberId, owned, renew, settings.laneLease());
            held = locked.held();
            if (renew) {
                lastRenew = started;
            }
            if (locked.members() >= 0 && locked.members() != seenMembers) {
                if (seenMembers >= 0) {
                    nextRebalance = started; // a member joined or left: move toward the new share before the next batch
                }
                seenMembers = locked.members();
            }
            if (held.size() < owned.size()) {
                List<Short> lost = new ArrayList<>(owned.keySet());
                lost.removeAll(held.keySet());
                owned.keySet().removeAll(lost);
                ownedCount = owned.size();
                log.info("{} - lanes {} were taken over by another relay (fence changed); no longer publishing them",
                        memberId, lost);
            }
            List<Short> open = new ArrayList<>(held.size());
            held.forEach((lane, blocked) -> {
                if (!blocked) {
                    open.add(lane);
                }
            });
            OutboxClaims.Claimed claimed = open.isEmpty() ? null : claims.claim(c, open, settings.batchSize(), engine.waits().paused());
            rows = claimed == null ? List.of() : claimed.rows();
            lanes = claimed == null ? new short[0] : claimed.lanes();
            if (rows.isEmpty()) {
                c.commit();
                return 0;
            }
        } catch (SQLException | RuntimeException e) {
            rollbackQuietly(c);
            throw e;
        }
        long claimedAt = System.nanoTime();
        BatchPublisher.Result result = publisher.publish(rows, lanes);
        long publishedAt = System.nanoTime();
        try {
            settle(c, rows, lanes, result);
            c.commit();
            if (log.isDebugEnabled()) {
                long done = System.nanoTime();
                log.debug("{} - batch of {}: claim {} us, publish {} us, settle+commit {} us", memberId, rows.size(),
                        (claimedAt - started) / 1000, (publishedAt - claimedAt) / 1000, (done - publishedAt) / 1000);
            }
        } catch (SQLException | RuntimeException e) {
            // nothing was deleted: every row stays in the outbox and is published again later
            rollbackQuietly(c);
            throw e;
        }
        engine.batchDone(rows, result.outcomes(), result.latencyNanos());
        return rows.size();
    }

    private void settle(Connection c, List<PublishRecord> rows, short[] lanes, BatchPublisher.Result result) throws SQLException {
        Outcome[] outcomes = result.outcomes();
        LongList confirmed = new LongList();
        LongList retryIds = new LongList();
        List<String> retryErrors = new ArrayList<>();
        LongList retryDelays = new LongList();
        List<Integer> retryExtra = new ArrayList<>();
        LongList deadIds = new LongList();
        List<String> deadReasons = new ArrayList<>();
        List<Integer> deadExtra = new ArrayList<>();
        Map<Short, Long> blocks = new HashMap<>();
        int waiting = 0;
        for (int i = 0; i < rows.size(); i++) {
            PublishRecord row = rows.get(i);
            Outcome o = outcomes[i];
            switch (o.kind()) {
                case CONFIRMED -> confirmed.add(row.id());
                case NO_ROUTE -> {
                    deadIds.add(row.id());
                    deadReasons.add(o.error());
                    deadExtra.add(0);
                    log.warn("{} - dead-lettering {} (id {}): {}", memberId, row.stepKey(), row.id(), o.error());
                }
                case PERMANENT -> {
                    deadIds.add(row.id());
                    deadReasons.add(OutboxClaims.clip("not retryable: " + o.error()));
                    deadExtra.add(1);
                    log.warn("{} - dead-lettering {} (id {}, destination {}): broker refused it for good: {}",
                            memberId, row.stepKey(), row.id(), row.destination(), o.error());
                }
                case WAIT -> {
                    // the destination's target is missing: no attempt counted, due again when the
                    // destination's pause ends, and the lane stays open for other destinations
                    retryIds.add(row.id());
                    retryErrors.add(OutboxClaims.clip(String.valueOf(o.error())));
                    retryDelays.add(0);
                    retryExtra.add(0);
                    waiting++;
                }
                case HELD -> {
                    // not sent: no attempt counted, due again when the failed row is
                    retryIds.add(row.id());
                    retryErrors.add(OutboxClaims.clip(String.valueOf(o.error())));
                    retryDelays.add(0);
                    retryExtra.add(0);
                }
                case RETRY -> {
                    int attempts = row.attempts() + 1;
                    if (attempts >= settings.maxAttempts()) {
                        deadIds.add(row.id());
                        deadReasons.add(OutboxClaims.clip("gave up after " + attempts + " attempts: " + o.error()));
                        deadExtra.add(1);
                        log.warn("{} - dead-lettering {} (id {}, destination {}) after {} attempts: {}",
                                memberId, row.stepKey(), row.id(), row.destination(), attempts, o.error());
                    } else {
                        long delay = backoff.delayMillis(attempts);
                        retryIds.add(row.id());
                        retryErrors.add(OutboxClaims.clip(o.error()));
                        retryDelays.add(delay);
                        retryExtra.add(1);
                        blocks.merge(lanes[i], delay, Math::max);
                    }
                }
            }
        }
        if (retryIds.size() > waiting) {
            log.warn("{} - {} of {} rows not confirmed, retrying after backoff (lanes {} paused); first error: {}",
                    memberId, retryIds.size() - waiting, rows.size(), blocks.keySet(), retryErrors.get(0));
        } else if (waiting > 0) {
            // DestinationWaits logs when a destination starts and stops waiting
            log.debug("{} - {} of {} rows wait for their destination's target: {}", memberId, waiting, rows.size(),
                    retryErrors.get(0));
        }
        claims.delete(c, confirmed.toArray());
        claims.retry(c, retryIds.toArray(), retryErrors.toArray(String[]::new), retryDelays.toArray(),
                retryExtra.stream().mapToInt(Integer::intValue).toArray());
        claims.block(c, blocks);
        claims.deadLetter(c, deadIds.toArray(), deadReasons.toArray(String[]::new),
                deadExtra.stream().mapToInt(Integer::intValue).toArray());
    }

    /**
     * Heartbeat, then take or release lanes toward a fair share of {@value Lanes#COUNT} among live
     * members, counting all of this relay's workers from the start. Returns whether this worker
     * still holds fewer lanes than its share.
     */
    private boolean rebalance(Connection c) throws SQLException {
        try {
            if (!lanesInitialised) {
                claims.initLanes(c);
                c.commit();
                lanesInitialised = true;
            }
            int live = Math.max(1, claims.heartbeat(c, memberId, relayWorkers, settings.laneLease()));
            c.commit();
            int share = (Lanes.COUNT + live - 1) / live;
            Map<Short, Long> current = claims.owned(c, memberId);
            if (current.size() > share) {
                List<Short> surplus = new ArrayList<>(current.keySet()).subList(share, current.size());
                claims.release(c, memberId, surplus);
                c.commit();
                surplus.forEach(current::remove);
                log.debug("{} - released lanes {} ({} live members, share {})", memberId, surplus, live, share);
            } else if (current.size() < share) {
                Map<Short, Long> taken = claims.take(c, memberId, share - current.size(), settings.laneLease());
                c.commit();
                current.putAll(taken);
                if (!taken.isEmpty()) {
                    lastRenew = System.nanoTime() - Long.MAX_VALUE / 2;
                    log.debug("{} - took lanes {} ({} live members, share {})", memberId, taken.keySet(), live, share);
                }
            } else {
                c.commit();
            }
            owned.clear();
            owned.putAll(current);
            ownedCount = owned.size();
            return owned.size() < share && live <= Lanes.COUNT;
        } catch (SQLException | RuntimeException e) {
            rollbackQuietly(c);
            throw e;
        }
    }

    private Connection connection() throws SQLException {
        Connection c = connection;
        if (c != null) {
            return c;
        }
        c = settings.dataSource().getConnection();
        try {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                // a relay stalled inside a batch must not hold its lanes' locks past the lease
                long guard = settings.laneLease().toMillis();
                s.execute("SET idle_in_transaction_session_timeout = " + guard);
                s.execute("SET statement_timeout = " + guard);
                s.execute("SET synchronous_commit = off");
            }
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
        if (SchemaCheck.isUndefinedTable(e)) {
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
        nextRebalance = System.nanoTime(); // re-read ownership after reconnecting
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
                waitMillis = WAKE_STEPS_MILLIS[wakeStep++];
            } else {
                wakeStep = -1;
                // a long poll interval must not let the lane leases lapse or delay taking over lanes
                long untilRebalance = Math.max(1, (nextRebalance - System.nanoTime()) / 1_000_000L);
                waitMillis = Math.min(settings.pollInterval().toMillis(), Math.min(untilRebalance, renewNanos / 1_000_000L));
            }
            waitOn(waitMillis);
            if (woken) {
                woken = false;
                wakeStep = 0;
            }
        }
    }

    private void resetWake() {
        synchronized (signal) {
            wakeStep = -1;
        }
    }

    private void pause(long millis) {
        synchronized (signal) {
            waitOn(millis);
            woken = false;
        }
    }

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

    /**
     * Releases the lanes and the membership, so another relay takes them over at once instead of after the lease.
     * Always on a fresh connection: after {@link #abort()} the worker's own one is broken, although a pool's proxy
     * may still report it open.
     */
    private void leave() {
        // an overrunning batch is stopped by abort() plus an interrupt; the release must still run
        boolean interrupted = Thread.interrupted();
        Connection used = connection;
        connection = null;
        if (used != null) {
            closeQuietly(used);
        }
        try (Connection c = settings.dataSource().getConnection()) {
            c.setAutoCommit(false);
            try {
                claims.leave(c, memberId);
                c.commit();
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly(c);
                throw e;
            }
            log.debug("{} - released lanes {}", memberId, owned.keySet());
        } catch (SQLException | RuntimeException e) {
            log.warn("{} - could not release lanes on close; they free up when the lease ends: {}", memberId, e.toString());
        } finally {
            owned.clear();
            ownedCount = 0;
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

    private static void closeQuietly(Connection c) {
        try {
            if (!c.isClosed() && !c.getAutoCommit()) {
                c.rollback();
            }
            try (Statement s = c.createStatement()) {
                s.execute("RESET idle_in_transaction_session_timeout; RESET statement_timeout");
            }
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

    /** A growable long[] without boxing. */
    private static final class LongList {
        private long[] values = new long[16];
        private int size;

        void add(long v) {
            if (size == values.length) {
                values = java.util.Arrays.copyOf(values, size * 2);
            }
            values[size++] = v;
        }

        boolean isEmpty() {
            return size == 0;
        }

        int size() {
            return size;
        }

        long[] toArray() {
            return java.util.Arrays.copyOf(values, size);
        }
    }
}
