package io.txbox.inbox;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.internal.Args;
import io.txbox.internal.ByDialect;
import io.txbox.internal.KeyRules;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The parked ordering keys of one consumer on one database ({@link Inbox#parkedKeys}): sequenced
 * dead letters. A consumer built with {@code parkKeys(true)} stores a message that goes DEAD
 * here as the head of its ordering key, and every later message of that key behind it, in
 * arrival order, with payload and headers, instead of running it; it acks them, so the
 * partition or queue keeps flowing for the other keys and nothing is lost. The key stays parked
 * until an operator resolves it:
 * <ul>
 *   <li>{@link #retry}: runs the dead message again, then the others in order;
 *   <li>{@link #skip}: drops the dead message for good (its inbox entry becomes COMPLETED without
 *       a result, so a redelivery is a duplicate), then runs the others in order.
 * </ul>
 * Either way each message runs through the handler given, in atomic mode: its inbox entry, the
 * handler's writes and the removal of the parked message commit in one transaction, so each runs
 * exactly once, however often a resolution is repeated or interrupted. A message that fails
 * again stops the resolution and becomes the key's head; the messages behind it stay parked.
 * A key is released when its last parked message is gone; a message of the key that arrives
 * during a resolution parks behind the others and is run by it.
 *
 * <p>An operator without the handler (the admin CLI) {@linkplain #request requests} a resolution
 * instead; the running consumer carries it out ({@link #resolveRequested}).
 *
 * <p>Parked messages are rows of their own ({@code <prefix>inbox_parked}, migration V5): the
 * inbox's retention never deletes them, and their payloads were checked against the inbox's
 * {@code maxPayloadBytes} when received. Thread-safe; each call is one or more short
 * transactions of its own on the {@link DataSource}, except the two that take the caller's.
 */
public final class ParkedKeys {
    /** Largest {@code limit} of {@link #list} and {@link #resolveRequested}: {@value}. */
    public static final int MAX_LIMIT = 10_000;

    /**
     * Parked messages of a consumer, their keys, and how long the oldest has waited (database time;
     * zero when none).
     */
    public record Stats(long messages, long keys, Duration oldestAge) {}

    /** Runs one parked message to an outcome, for consumers without a database transaction (two-phase). */
    @FunctionalInterface
    public interface Runner {
        /**
         * Runs {@code message} exactly once (a claim, the work, its completion): PROCESSED or
         * DUPLICATE remove it from the parked messages; anything else stops the resolution.
         */
        Outcome run(InboundMessage message);
    }

    private final Inbox inbox;
    private final InboxCore core;
    private final DataSource ds;
    private final ByDialect<ParkedStore> stores;

    ParkedKeys(Inbox inbox, InboxCore core, DataSource ds) {
        this.inbox = inbox;
        this.core = core;
        this.ds = Args.notNull(ds, "ds");
        this.stores = new ByDialect<>(d -> new ParkedStore(core.tables, d));
    }

    /** The consumer whose keys these are. */
    public String consumer() {
        return core.consumer;
    }

    // ---- the consumer's side ----

    /**
     * In the receiving transaction {@code tx}, right after {@code message}'s receive reported
     * FIRST: if {@code orderingKey} is parked, parks {@code message} behind it and removes the
     * entry the receive wrote, so the message runs only when the key is resolved. One indexed
     * read when the key is not parked (it takes a share lock on the key's first parked message,
     * so a resolution finishing the key waits for this transaction or this one for it).
     *
     * @return whether the message was parked: then the caller runs no handler and commits
     */
    public boolean parkIfParked(Connection tx, String orderingKey, InboundMessage message) {
        Args.notNull(tx, "tx");
        checkKey(orderingKey);
        Args.notNull(message, "message");
        try {
            ParkedStore store = stores.on(tx);
            if (!store.isParked(tx, core.consumer, orderingKey, true)) {
                return false;
            }
            store.park(tx, core.consumer, orderingKey, message, false, null);
            store.unreceive(tx, core.consumer, message.key());
            if (InboxCore.log.isDebugEnabled()) { // one line per message: the metrics count them
                InboxCore.log.debug("{} - key {} parked behind ordering key {}", core.consumer,
                        core.keyLogs.show(message.key()), core.keyLogs.show(orderingKey));
            }
            return true;
        } catch (java.sql.SQLException e) {
            throw core.translate(core.consumer + " - parking check for ordering key " + core.keyLogs.show(orderingKey), e);
        }
    }

    /**
     * For a consumer without a receiving transaction (two-phase): parks {@code message} behind
     * {@code orderingKey} in a transaction of its own if the key is parked. The caller then
     * releases its claim.
     *
     * @return whether the message was parked
     */
    public boolean parkIfParked(String orderingKey, InboundMessage message) {
        checkKey(orderingKey);
        Args.notNull(message, "message");
        return core.inOwnTransaction(ds, core.consumer + " - parking check", c -> {
            ParkedStore store = stores.on(c);
            if (!store.isParked(c, core.consumer, orderingKey, true)) {
                return false;
            }
            store.park(c, core.consumer, orderingKey, message, false, null);
            return true;
        });
    }

    /**
     * Parks {@code orderingKey} with {@code message}, which went DEAD, as its head, in a
     * transaction of its own. Repeating it for a message parked already changes nothing.
     */
    public void parkDead(String orderingKey, InboundMessage message, String reason) {
        checkKey(orderingKey);
        Args.notNull(message, "message");
        Args.notNull(reason, "reason");
        core.inOwnTransaction(ds, core.consumer + " - parking a dead message", c -> {
            stores.on(c).park(c, core.consumer, orderingKey, message, true, reason);
            return null;
        });
        InboxCore.log.error("{} - ordering key {} parked: key {} is DEAD; later messages of the key wait for an "
                + "operator (retry or skip)", core.consumer, core.keyLogs.show(orderingKey),
                core.keyLogs.show(message.key()));
    }

    // ---- the operator's side ----

    /** Whether {@code orderingKey} has parked messages. */
    public boolean isParked(String orderingKey) {
        checkKey(orderingKey);
        return core.inOwnTransaction(ds, core.consumer + " - parked read",
                c -> stores.on(c).isParked(c, core.consumer, orderingKey, false));
    }

    /** Up to {@code limit} (1 to {@value #MAX_LIMIT}) parked keys of this consumer, oldest first. */
    public List<ParkedKey> list(int limit) {
        checkLimit(limit);
        return core.inOwnTransaction(ds, core.consumer + " - list parked keys",
                c -> stores.on(c).list(c, core.consumer, limit));
    }

    /** Parked messages and keys of this consumer and the oldest one's age: one aggregate read. */
    public Stats stats() {
        return core.inOwnTransaction(ds, core.consumer + " - parked stats", c -> stores.on(c).stats(c, core.consumer));
    }

    /**
     * Runs the key's dead message through {@code handler} again (its DEAD entry reset, as
     * {@link Inbox#resetDead} does), then the key's other parked messages in order, each in one
     * transaction with its inbox entry. Stops at the first that fails (it becomes the head).
     */
    public Resolution retry(String orderingKey, Handler handler) {
        Args.notNull(handler, "handler");
        return resolveRows(orderingKey, false, (row, m) -> atomically(row, m, handler));
    }

    /**
     * Drops the key's dead message for good (its inbox entry becomes COMPLETED without a result,
     * so a redelivery of it is a duplicate), then runs the others as {@link #retry} does.
     */
    public Resolution skip(String orderingKey, Handler handler) {
        Args.notNull(handler, "handler");
        return resolveRows(orderingKey, true, (row, m) -> atomically(row, m, handler));
    }

    /**
     * {@link #retry} or ({@code skipHead}) {@link #skip}, each parked message run by
     * {@code runner}, for consumers without a database transaction around the handler
     * (two-phase): a message is removed from the parked ones after {@code runner} reports it
     * PROCESSED or DUPLICATE, so a crash in between runs it again, which the runner's claim
     * turns into a DUPLICATE.
     */
    public Resolution resolve(String orderingKey, boolean skipHead, Runner runner) {
        Args.notNull(runner, "runner");
        return resolveRows(orderingKey, skipHead, (row, m) -> runner.run(m));
    }

    /**
     * Asks the running consumer to retry or skip the key ({@link #resolveRequested}), for an
     * operator without the handler.
     *
     * @return {@code false} if the key is not parked
     */
    public boolean request(String orderingKey, ParkedKey.Action action) {
        checkKey(orderingKey);
        Args.notNull(action, "action");
        return core.inOwnTransaction(ds, core.consumer + " - request for a parked key",
                c -> stores.on(c).request(c, core.consumer, orderingKey, action) > 0);
    }

    /**
     * Carries out up to {@code limit} waiting {@linkplain #request requests} with {@code handler}
     * (consumers call this now and then).
     */
    public List<Resolution> resolveRequested(int limit, Handler handler) {
        Args.notNull(handler, "handler");
        return resolveRequestedWith(limit, (key, skip) -> resolveRows(key, skip, (row, m) -> atomically(row, m, handler)));
    }

    /** {@link #resolveRequested(int, Handler)} with a {@link Runner}, for two-phase consumers. */
    public List<Resolution> resolveRequested(int limit, Runner runner) {
        Args.notNull(runner, "runner");
        return resolveRequestedWith(limit, (key, skip) -> resolveRows(key, skip, (row, m) -> runner.run(m)));
    }

    private interface KeyResolver {
        Resolution resolve(String key, boolean skip);
    }

    private List<Resolution> resolveRequestedWith(int limit, KeyResolver resolver) {
        checkLimit(limit);
        List<Resolution> done = new ArrayList<>();
        for (String key : core.inOwnTransaction(ds, core.consumer + " - requested parked keys",
                c -> stores.on(c).requested(c, core.consumer, limit))) {
            List<ParkedKey> now = core.inOwnTransaction(ds, core.consumer + " - parked key",
                    c -> stores.on(c).list(c, core.consumer, MAX_LIMIT));
            ParkedKey.Action action = now.stream().filter(k -> k.orderingKey().equals(key)).map(ParkedKey::requested)
                    .filter(a -> a != null).findFirst().orElse(null);
            if (action != null) {
                done.add(resolver.resolve(key, action == ParkedKey.Action.SKIP));
            }
        }
        return done;
    }

    // ---- resolution ----

    private interface RowRunner {
        Outcome run(ParkedStore.Row row, InboundMessage message);
    }

    /** Atomic mode: the parked message's removal commits with its inbox entry and the handler's writes. */
    private Outcome atomically(ParkedStore.Row row, InboundMessage m, Handler handler) {
        return inbox.process(ds, m, (tx, message) -> {
            stores.on(tx).delete(tx, row.id());
            return handler.handle(tx, message);
        });
    }

    private Resolution resolveRows(String orderingKey, boolean skipHead, RowRunner runner) {
        checkKey(orderingKey);
        String what = core.consumer + " - resolving ordering key " + core.keyLogs.show(orderingKey);
        core.inOwnTransaction(ds, what, c -> stores.on(c).request(c, core.consumer, orderingKey, null));
        int ran = 0;
        int skipped = 0;
        boolean skipNext = skipHead;
        while (true) {
            ParkedStore.Row row = core.inOwnTransaction(ds, what, c -> stores.on(c).first(c, core.consumer, orderingKey));
            if (row == null) {
                InboxCore.log.info("{}: released after {} run, {} skipped", what, ran, skipped);
                return new Resolution(orderingKey, ran, skipped, true, null, null);
            }
            if (row.head() && skipNext) {
                core.inOwnTransaction(ds, what, c -> {
                    ParkedStore store = stores.on(c);
                    store.delete(c, row.id());
                    store.completeSkipped(c, core.consumer, row.messageKey());
                    return null;
                });
                InboxCore.log.warn("{}: dead key {} skipped by an operator", what, core.keyLogs.show(row.messageKey()));
                skipped++;
                skipNext = false;
                continue;
            }
            skipNext = false;
            if (row.head()) {
                inbox.resetDead(ds, row.messageKey());
            }
            Outcome outcome = runner.run(row, row.message());
            if (outcome.status() == Outcome.Status.PROCESSED || outcome.status() == Outcome.Status.DUPLICATE) {
                core.inOwnTransaction(ds, what, c -> stores.on(c).delete(c, row.id()));
                ran++;
                continue;
            }
            String reason = outcome.status() + (outcome.reason() == null ? "" : ": " + outcome.reason());
            core.inOwnTransaction(ds, what, c -> {
                stores.on(c).makeHead(c, row.id(), reason);
                return null;
            });
            InboxCore.log.error("{}: key {} failed again and holds the key: {}", what,
                    core.keyLogs.show(row.messageKey()), reason);
            return new Resolution(orderingKey, ran, skipped, false, row.messageKey(), reason);
        }
    }

    private static void checkKey(String orderingKey) {
        Args.notNull(orderingKey, "orderingKey");
        KeyRules.check("ordering key", orderingKey);
    }

    private static void checkLimit(int limit) {
        if (limit < 1 || limit > MAX_LIMIT) {
            throw new InvalidInputException("limit must be between 1 and " + MAX_LIMIT + ", but was " + limit);
        }
    }

    @Override
    public String toString() {
        return "ParkedKeys[" + Texts.quote(core.consumer) + "]";
    }
}
