package io.txbox.inbox.consumer.internal;

import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.Receipt;
import io.txbox.internal.Args;
import io.txbox.internal.Dialect;
import io.txbox.internal.KeyLogs;
import io.txbox.internal.TransactionFrame;
import io.txbox.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Atomic mode: a delivery runs in a database transaction with its inbox entry, through
 * {@link Inbox#process}, several in one transaction ({@link #inOneTransaction}), or one
 * transaction each with each commit sent along with the next delivery's insert ({@link #chain}).
 * Where the database allows either is asked of its {@link Dialect}'s capabilities.
 */
final class AtomicDeliveries implements Deliveries {
    private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

    private final String consumer;
    private final Inbox inbox;
    private final DataSource dataSource;
    private final Handler handler;
    private final @Nullable Parking parking;
    private final DeliveryKeys keys;
    private final Decisions decisions;
    private final KeyLogs keyLogs;
    private final Clock clock;
    // The database's family, for what it can do; null until a connection said which it is.
    private volatile @Nullable Dialect dialect;

    AtomicDeliveries(String consumer, Inbox inbox, DataSource dataSource, Handler handler, @Nullable Parking parking,
            DeliveryKeys keys, Decisions decisions, KeyLogs keyLogs, Clock clock) {
        this.consumer = consumer;
        this.inbox = inbox;
        this.dataSource = dataSource;
        this.handler = handler;
        this.parking = parking;
        this.keys = keys;
        this.decisions = decisions;
        this.keyLogs = keyLogs;
        this.clock = clock;
    }

    @Override
    public Outcome run(InboundMessage message, @Nullable String orderingKey) {
        return inbox.process(dataSource, message, handlerFor(Parking.one(message, orderingKey)));
    }

    /** Whether the database sends a commit along with the next statement; {@code false} while it is unreachable. */
    boolean chainsCommits() {
        Dialect d = dialect;
        if (d == null) {
            try {
                d = Dialect.of(dataSource);
            } catch (RuntimeException e) {
                return false; // the database is unreachable: ask again next time
            }
            dialect = d;
        }
        return d.chainsCommits();
    }

    private boolean receivesAhead(Connection c) throws SQLException {
        Dialect d = dialect;
        if (d == null) {
            d = Dialect.of(c);
            dialect = d;
        }
        return d.receivesAheadOfResults();
    }

    /**
     * The batch's one transaction; {@code null} when anything but a first delivery, a duplicate
     * or a dead key came up, or the database failed: then nothing was committed.
     */
    @Nullable List<Decision> inOneTransaction(List<Delivery> deliveries) {
        int n = deliveries.size();
        String[] resolved = new String[n];
        Outcome[] outcomes = new Outcome[n];
        Instant start = clock.instant();
        try (Connection c = dataSource.getConnection();
                TransactionFrame tx = TransactionFrame.begin(c, this::cleanup)) {
            if (!runAll(c, deliveries, resolved, outcomes)) {
                return null;
            }
            tx.commit();
        } catch (Exception e) {
            if (log.isDebugEnabled()) {
                String why = e.toString();
                for (String key : resolved) {
                    why = key == null ? why : keyLogs.redact(why, key);
                }
                log.debug("{} - batch of {} rolled back, running it one delivery at a time: {}", consumer, n, why);
            }
            return null;
        }
        decisions.answered(); // keyless deliveries too: the database answered
        Duration each = Duration.between(start, clock.instant()).dividedBy(n);
        List<Decision> decided = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            if (resolved[i] == null) {
                decided.add(decisions.keyless(deliveries.get(i)));
            } else {
                decisions.heard(outcomes[i].status(), each);
                decided.add(decisions.decide(deliveries.get(i), resolved[i], outcomes[i]));
            }
        }
        return decided;
    }

    /** Receives and handles the batch on {@code c}; {@code false} when a key is in flight elsewhere. */
    private boolean runAll(Connection c, List<Delivery> deliveries, String[] resolved, Outcome[] outcomes)
            throws Exception {
        int n = deliveries.size();
        // Where the database allows, the batch's inbox rows in one call (Inbox.receiveAll). A key
        // that comes again later in the batch is received at its turn, after its first delivery's
        // result is stored, so it reads as it would one delivery at a time.
        boolean ahead = receivesAhead(c);
        InboundMessage[] messages = new InboundMessage[n];
        boolean[] atTurn = new boolean[n];
        Set<String> seen = new HashSet<>();
        List<InboundMessage> early = new ArrayList<>(n);
        Map<InboundMessage, String> orderingKeys = new IdentityHashMap<>();
        for (int i = 0; i < n; i++) {
            resolved[i] = keys.resolve(deliveries.get(i));
            if (resolved[i] != null) {
                messages[i] = keys.message(deliveries.get(i), resolved[i]);
                atTurn[i] = !ahead || !seen.add(resolved[i]);
                if (!atTurn[i]) {
                    early.add(messages[i]);
                }
            }
        }
        @Nullable Iterator<Receipt> received = early.isEmpty() ? null : inbox.receiveAll(c, early).iterator();
        for (int i = 0; i < n; i++) {
            String orderingKey = keys.orderingKey(deliveries.get(i));
            if (messages[i] != null && orderingKey != null) {
                orderingKeys.put(messages[i], orderingKey);
            }
        }
        Handler batchHandler = handlerFor(orderingKeys);
        for (int i = 0; i < n; i++) {
            if (messages[i] != null) {
                Receipt receipt = atTurn[i] ? inbox.receive(c, messages[i]) : Objects.requireNonNull(received).next();
                outcomes[i] = handle(c, messages[i], receipt, batchHandler);
                if (outcomes[i] == null) {
                    log.debug("{} - {}: key in flight elsewhere; the batch runs one delivery at a time",
                            consumer, deliveries.get(i).coordinates());
                    return false;
                }
            }
        }
        return true;
    }

    /** One received delivery inside the batch's transaction; {@code null} for a key in flight elsewhere. */
    private @Nullable Outcome handle(Connection c, InboundMessage message, Receipt receipt, Handler handler)
            throws Exception {
        switch (receipt.status()) {
            case FIRST: {
                byte[] result = handler.handle(c, message);
                Transactions.requireNotAborted(c, "consumer " + consumer + " key " + decisions.logKey(message.key()));
                if (result != null) {
                    inbox.storeResult(c, message, result);
                }
                return new Outcome(Outcome.Status.PROCESSED, result, receipt.attempts(), null, null);
            }
            case DUPLICATE:
                return new Outcome(Outcome.Status.DUPLICATE, receipt.result(), receipt.attempts(), null, null);
            case DEAD:
                return new Outcome(Outcome.Status.DEAD, null, receipt.attempts(), receipt.reason(), null);
            case IN_FLIGHT:
            default:
                return null;
        }
    }

    /**
     * Runs deliveries in order through {@link Inbox#processChained}, as documented on
     * {@link DeliveryProcessor#processChained}; a delivery the chain leaves (or one alone, or a
     * keyless one) runs through {@code single}.
     */
    List<Decision> chain(List<Delivery> deliveries, BooleanSupplier proceed, Function<Delivery, Decision> single) {
        List<Decision> decided = new ArrayList<>(deliveries.size());
        ChainReporter reporter = new ChainReporter(clock, decisions::heard);
        boolean[] stopped = {false};
        Predicate<Outcome> more = o -> {
            reporter.asked(o);
            if (o.status() != Outcome.Status.PROCESSED && o.status() != Outcome.Status.DUPLICATE) {
                return false;
            }
            stopped[0] = !proceed.getAsBoolean();
            return !stopped[0];
        };
        int i = 0;
        while (i < deliveries.size() && !stopped[0]) {
            if (i > 0 && !proceed.getAsBoolean()) {
                break;
            }
            List<String> resolved = new ArrayList<>();
            List<InboundMessage> messages = new ArrayList<>();
            Map<InboundMessage, String> orderingKeys = new IdentityHashMap<>();
            for (int j = i; j < deliveries.size(); j++) {
                String key = keys.resolve(Args.notNull(deliveries.get(j), "deliveries[" + j + "]"));
                if (key == null) {
                    break;
                }
                resolved.add(key);
                messages.add(keys.message(deliveries.get(j), key));
                String orderingKey = keys.orderingKey(deliveries.get(j));
                if (orderingKey != null) {
                    orderingKeys.put(messages.get(messages.size() - 1), orderingKey);
                }
            }
            List<Outcome> outcomes = List.of();
            if (messages.size() > 1) {
                reporter.start();
                outcomes = inbox.processChained(dataSource, messages, handlerFor(orderingKeys), more);
                reporter.returned(outcomes);
            }
            for (int k = 0; k < outcomes.size(); k++, i++) {
                Decision decision = decisions.decide(deliveries.get(i), resolved.get(k), outcomes.get(k));
                decided.add(decision);
                if (!(decision instanceof Decision.Ack)) {
                    return decided;
                }
            }
            if (stopped[0] || i >= deliveries.size()) {
                break;
            }
            // A delivery the chain left (or one alone, or keyless) runs as a single delivery runs.
            Decision decision = single.apply(deliveries.get(i++));
            decided.add(decision);
            if (!(decision instanceof Decision.Ack)) {
                break;
            }
        }
        return decided;
    }

    /** The handler, wrapped to park the messages of parked keys when this consumer parks keys. */
    private Handler handlerFor(Map<InboundMessage, String> orderingKeys) {
        return parking == null || orderingKeys.isEmpty() ? handler : parking.wrap(handler, orderingKeys);
    }

    /** A failed rollback or restore at the end of a batch: the connection is gone, and the database rolled back anyway. */
    private void cleanup(String step, SQLException e) {
        log.debug("{} - {} after a batch failed: {}", consumer, step, e.toString());
    }
}
