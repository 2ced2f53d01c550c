package io.txbox.redis;

import io.txbox.inbox.Claim;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.internal.ForwardingInbox;
import io.txbox.internal.Args;
import io.txbox.redis.RedisFront.Front;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * {@link HybridInbox}: the {@link Inbox} API over a {@link RedisFront}, a Lua check in Redis
 * before the database inbox, which decides everything else. The calls the front does not
 * change (receiving in the caller's transaction, operators, retention) go to the database
 * inbox as they are.
 */
final class HybridInboxImpl extends ForwardingInbox implements HybridInbox {
    private final String consumer;
    private final RedisFront front;

    HybridInboxImpl(HybridInbox.Builder b) {
        super(b.database);
        this.consumer = b.database.consumer();
        this.front = new RedisFront(b, consumer, b.database.fingerprint());
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
                return delegate().process(ds, message, handler);
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
                outcome = delegate().process(ds, message, handler);
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
                return delegate().claim(ds, message);
            case MARKED:
            case UNKNOWN:
            default:
                break;
        }
        byte[] key = Objects.requireNonNull(f.key());
        Claim claim;
        try {
            claim = delegate().claim(ds, message);
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
        delegate().complete(ds, claim, result);
        front.cache(front.keyOf(claim), null, result, null, null, claim.fencingToken(), "cache");
    }

    @Override
    public void complete(Connection tx, Claim claim, byte @Nullable [] result) {
        Args.notNull(claim, "claim");
        try {
            delegate().complete(tx, claim, result);
        } finally {
            // Not committed yet: duplicates must ask the database, which waits for this transaction.
            front.unmark(front.keyOf(claim), "unmark");
        }
    }

    @Override
    public void complete(DataSource ds, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders,
            byte[] body) {
        Args.notNull(claim, "claim");
        delegate().complete(ds, claim, resultStatus, resultHeaders, body);
        front.cache(front.keyOf(claim), null, body, resultStatus, resultHeaders, claim.fencingToken(), "cache");
    }

    @Override
    public void complete(Connection tx, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders,
            byte[] body) {
        Args.notNull(claim, "claim");
        try {
            delegate().complete(tx, claim, resultStatus, resultHeaders, body);
        } finally {
            front.unmark(front.keyOf(claim), "unmark");
        }
    }

    @Override
    public Outcome fail(DataSource ds, Claim claim, Throwable error) {
        Args.notNull(claim, "claim");
        try {
            return delegate().fail(ds, claim, error);
        } finally {
            front.unmark(front.keyOf(claim), "unmark");
        }
    }

    @Override
    public void release(DataSource ds, Claim claim) {
        Args.notNull(claim, "claim");
        try {
            delegate().release(ds, claim);
        } finally {
            front.unmark(front.keyOf(claim), "unmark");
        }
    }
}
