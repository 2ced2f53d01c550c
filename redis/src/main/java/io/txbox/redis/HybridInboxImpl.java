package io.txbox.redis;

import io.txbox.inbox.Claim;
import io.txbox.inbox.DeadEntry;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.Receipt;
import io.txbox.inbox.RetentionTask;
import io.txbox.internal.Args;
import io.txbox.redis.RedisFront.Front;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * {@link HybridInbox}: the {@link Inbox} API over a {@link RedisFront}, a Lua check in Redis
 * before the database inbox, which decides everything else.
 */
final class HybridInboxImpl implements HybridInbox {
    private final Inbox db;
    private final String consumer;
    private final RedisFront front;

    HybridInboxImpl(HybridInbox.Builder b) {
        this.db = b.database;
        this.consumer = db.consumer();
        this.front = new RedisFront(b, consumer, db.fingerprint());
    }

    @Override
    public String consumer() {
        return db.consumer();
    }

    @Override
    public Fingerprint fingerprint() {
        return db.fingerprint();
    }

    @Override
    public BreakerState breakerState() {
        return front.breakerState();
    }

    @Override
    public void close() {
        front.close();
    }

    // ---- atomic mode ----

    @Override
    public Outcome process(DataSource ds, InboundMessage message, Handler handler) {
        Args.notNull(ds, "ds");
        Args.notNull(handler, "handler");
        Front f = front.check(message);
        switch (f.kind()) {
            case HIT:
                return new Outcome(Outcome.Status.DUPLICATE, f.result(), f.attempts(), null, null);
            case IN_FLIGHT:
                return new Outcome(Outcome.Status.IN_FLIGHT, null, 0, "another delivery of the key is in flight",
                        null);
            case MISS:
                return db.process(ds, message, handler);
            case MARKED:
            case UNKNOWN:
            default:
                break;
        }
        byte[] key = Objects.requireNonNull(f.key());
        // Only a marker this delivery knows it set answers this process's duplicates.
        RedisFront.Running mine = front.running(f);
        try {
            Outcome outcome;
            try {
                outcome = db.process(ds, message, handler);
            } catch (RuntimeException e) {
                front.unmark(key, "unmark");
                throw e;
            }
            if (outcome.status() == Outcome.Status.PROCESSED || outcome.status() == Outcome.Status.DUPLICATE) {
                front.completed(f, outcome.result(), outcome.attempts());
            } else {
                front.unmark(key, "unmark");
            }
            return outcome;
        } finally {
            front.ran(f, mine);
        }
    }

    @Override
    public Receipt receive(Connection tx, InboundMessage message) {
        return db.receive(tx, message);
    }

    @Override
    public void storeResult(Connection tx, InboundMessage message, byte[] result) {
        db.storeResult(tx, message, result);
    }

    @Override
    public Outcome recordFailure(DataSource ds, InboundMessage message, Throwable error) {
        return db.recordFailure(ds, message, error);
    }

    // ---- two-phase mode ----

    @Override
    public Claim claim(DataSource ds, InboundMessage message) {
        Args.notNull(ds, "ds");
        Front f = front.check(message);
        switch (f.kind()) {
            case HIT:
                return Claim.of(consumer, message.key(), message.tenant(), Claim.Status.DUPLICATE, f.attempts(), null,
                        f.result(), f.resultStatus(), f.headers(), null);
            case IN_FLIGHT:
                return Claim.of(consumer, message.key(), message.tenant(), Claim.Status.IN_FLIGHT, 0, null, null, null,
                        null, null);
            case MISS:
                return db.claim(ds, message);
            case MARKED:
            case UNKNOWN:
            default:
                break;
        }
        byte[] key = Objects.requireNonNull(f.key());
        Claim claim;
        try {
            claim = db.claim(ds, message);
        } catch (RuntimeException e) {
            front.unmark(key, "unmark");
            throw e;
        }
        switch (claim.status()) {
            case ACQUIRED -> { } // the marker stays until complete, fail or release
            case DUPLICATE -> front.cache(key, f.fp(), claim.result(), claim.resultStatus(), claim.resultHeaders(),
                    claim.fencingToken(), "cache");
            default -> front.unmark(key, "unmark");
        }
        return claim;
    }

    @Override
    public void complete(DataSource ds, Claim claim, byte @Nullable [] result) {
        Args.notNull(claim, "claim");
        db.complete(ds, claim, result);
        front.cache(front.keyOf(claim), null, result, null, null, claim.fencingToken(), "cache");
    }

    @Override
    public void complete(Connection tx, Claim claim, byte @Nullable [] result) {
        Args.notNull(claim, "claim");
        try {
            db.complete(tx, claim, result);
        } finally {
            // Not committed yet: duplicates must ask the database, which waits for this transaction.
            front.unmark(front.keyOf(claim), "unmark");
        }
    }

    @Override
    public void complete(DataSource ds, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders,
            byte[] body) {
        Args.notNull(claim, "claim");
        db.complete(ds, claim, resultStatus, resultHeaders, body);
        front.cache(front.keyOf(claim), null, body, resultStatus, resultHeaders, claim.fencingToken(), "cache");
    }

    @Override
    public void complete(Connection tx, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders,
            byte[] body) {
        Args.notNull(claim, "claim");
        try {
            db.complete(tx, claim, resultStatus, resultHeaders, body);
        } finally {
            front.unmark(front.keyOf(claim), "unmark");
        }
    }

    @Override
    public Outcome fail(DataSource ds, Claim claim, Throwable error) {
        Args.notNull(claim, "claim");
        try {
            return db.fail(ds, claim, error);
        } finally {
            front.unmark(front.keyOf(claim), "unmark");
        }
    }

    @Override
    public void release(DataSource ds, Claim claim) {
        Args.notNull(claim, "claim");
        try {
            db.release(ds, claim);
        } finally {
            front.unmark(front.keyOf(claim), "unmark");
        }
    }

    // ---- operators and retention: the database's ----

    @Override
    public boolean resetDead(DataSource ds, String key) {
        return db.resetDead(ds, key);
    }

    @Override
    public boolean resetDead(DataSource ds, String key, @Nullable String tenant) {
        return db.resetDead(ds, key, tenant);
    }

    @Override
    public List<DeadEntry> listDead(DataSource ds, int limit) {
        return db.listDead(ds, limit);
    }

    @Override
    public int purgeCompleted(DataSource ds) {
        return db.purgeCompleted(ds);
    }

    @Override
    public RetentionTask retentionTask(DataSource ds, Duration every) {
        return db.retentionTask(ds, every);
    }
}