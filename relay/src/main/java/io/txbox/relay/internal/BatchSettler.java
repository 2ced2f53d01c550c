package io.txbox.relay.internal;

import io.txbox.internal.Backoff;
import io.txbox.relay.PublishRecord;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Predicate;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What each row's {@link RowOutcome} does to it, in the batch's transaction: a confirmed row is
 * deleted (ending its key's hold, if any), a failed one retried after its backoff with its routing
 * key held at it (so no later row of its key overtakes it, while the lane's other keys go on), a
 * hopeless one dead-lettered with the reason, its key parked (held until an operator acts) unless
 * its destination moves on. A destination without a route dead-letters all its rows, parking no
 * key. Rows without a routing key are never held.
 */
final class BatchSettler {
    private static final Logger log = LoggerFactory.getLogger(BatchSettler.class);

    private final RelayStore store;
    private final String memberId;
    private final int maxAttempts;
    private final Backoff backoff;
    private final RandomGenerator random;
    private final Predicate<String> parks;

    BatchSettler(RelayStore store, String memberId, int maxAttempts, Backoff backoff, RandomGenerator random,
            Predicate<String> parks) {
        this.store = store;
        this.memberId = memberId;
        this.maxAttempts = maxAttempts;
        this.backoff = backoff;
        this.random = random;
        this.parks = parks;
    }

    /** Whether a row that failed with {@link RowOutcome.Kind#RETRY} is dead-lettered rather than retried. */
    static boolean givesUp(PublishRecord row, int maxAttempts) {
        return row.attempts() + 1 >= maxAttempts;
    }

    /**
     * Settles one batch; {@code holdsInLanes} says whether a key of the batch's lanes was held
     * when the batch's transaction locked them, so a confirmed row may end a hold.
     */
    void settle(Connection c, List<PublishRecord> rows, short[] lanes, RowOutcome[] outcomes, boolean holdsInLanes)
            throws SQLException {
        LongList confirmed = new LongList();
        LongList retryIds = new LongList();
        List<String> retryErrors = new ArrayList<>();
        LongList retryDelays = new LongList();
        LongList retryExtra = new LongList();
        LongList deadIds = new LongList();
        List<String> deadReasons = new ArrayList<>();
        LongList deadExtra = new LongList();
        Holds held = new Holds();
        Holds parked = new Holds();
        LongList released = new LongList();
        int waiting = 0;
        for (int i = 0; i < rows.size(); i++) {
            PublishRecord row = rows.get(i);
            RowOutcome o = outcomes[i];
            switch (o.kind()) {
                case CONFIRMED -> confirmed.add(row.id());
                case NO_ROUTE -> {
                    deadIds.add(row.id());
                    deadReasons.add(o.error());
                    deadExtra.add(0);
                    // a destination without a route dead-letters every row, in id order: no key parks
                    log.warn("{} - dead-lettering {} (id {}): {}", memberId, row.stepKey(), row.id(), o.error());
                    if (row.routingKey() != null) {
                        released.add(row.id());
                    }
                }
                case PERMANENT -> {
                    deadIds.add(row.id());
                    deadReasons.add(RowOutcome.clip("not retryable: " + o.error()));
                    deadExtra.add(1);
                    log.warn("{} - dead-lettering {} (id {}, destination {}): broker refused it for good: {}{}",
                            memberId, row.stepKey(), row.id(), row.destination(), o.error(),
                            parkOrRelease(row, lanes[i], parked, released));
                }
                case WAIT -> {
                    // the destination's target is missing: no attempt counted, due again when the
                    // destination's pause ends, and the lane stays open for other destinations
                    retryIds.add(row.id());
                    retryErrors.add(RowOutcome.clip(String.valueOf(o.error())));
                    retryDelays.add(0);
                    retryExtra.add(0);
                    waiting++;
                }
                case HELD -> {
                    // not sent: no attempt counted, due again when the failed row is
                    retryIds.add(row.id());
                    retryErrors.add(RowOutcome.clip(String.valueOf(o.error())));
                    retryDelays.add(0);
                    retryExtra.add(0);
                }
                case RETRY -> {
                    int attempts = row.attempts() + 1;
                    if (givesUp(row, maxAttempts)) {
                        deadIds.add(row.id());
                        deadReasons.add(RowOutcome.clip("gave up after " + attempts + " attempts: " + o.error()));
                        deadExtra.add(1);
                        log.warn("{} - dead-lettering {} (id {}, destination {}) after {} attempts: {}{}",
                                memberId, row.stepKey(), row.id(), row.destination(), attempts, o.error(),
                                parkOrRelease(row, lanes[i], parked, released));
                    } else {
                        long delay = backoff.delayMillis(attempts, random::nextDouble);
                        retryIds.add(row.id());
                        retryErrors.add(RowOutcome.clip(String.valueOf(o.error())));
                        retryDelays.add(delay);
                        retryExtra.add(1);
                        if (row.routingKey() != null) {
                            held.add(row, lanes[i]);
                        }
                    }
                }
            }
        }
        if (retryIds.size() > waiting) {
            log.warn("{} - {} of {} rows not confirmed, retrying after backoff ({} routing keys held); first error: {}",
                    memberId, retryIds.size() - waiting, rows.size(), held.rows.size(), retryErrors.get(0));
        } else if (waiting > 0) {
            // DestinationWaits logs when a destination starts and stops waiting
            log.debug("{} - {} of {} rows wait for their destination's target: {}", memberId, waiting, rows.size(),
                    retryErrors.get(0));
        }
        long[] deleted = confirmed.toArray();
        store.delete(c, deleted);
        store.retry(c, retryIds.toArray(), retryErrors.toArray(String[]::new), retryDelays.toArray(), retryExtra.toIntArray());
        store.hold(c, held.rows, held.lanes(), false);
        store.deadLetter(c, deadIds.toArray(), deadReasons.toArray(String[]::new), deadExtra.toIntArray());
        store.hold(c, parked.rows, parked.lanes(), true);
        if (holdsInLanes) {
            // only a key held when the lanes were locked can be held at one of these rows
            for (long id : deleted) {
                released.add(id);
            }
            store.unhold(c, released.toArray());
        }
    }

    /**
     * A dead-lettered row's key: parked at the row where its destination parks, otherwise any hold
     * at the row ends. Returns what the log line adds.
     */
    private String parkOrRelease(PublishRecord row, short lane, Holds parked, LongList released) {
        if (row.routingKey() == null) {
            return "";
        }
        if (parks.test(row.destination())) {
            parked.add(row, lane);
            return "; routing key " + row.routingKey() + " parked until the dead letter is retried or skipped";
        }
        released.add(row.id());
        return "";
    }

    /** Rows whose keys are held at them, with their lanes. */
    private static final class Holds {
        final List<PublishRecord> rows = new ArrayList<>();
        private final LongList lanes = new LongList();

        void add(PublishRecord row, short lane) {
            rows.add(row);
            lanes.add(lane);
        }

        short[] lanes() {
            long[] l = lanes.toArray();
            short[] out = new short[l.length];
            for (int i = 0; i < l.length; i++) {
                out[i] = (short) l[i];
            }
            return out;
        }
    }

    /** A growable long[] without boxing. */
    private static final class LongList {
        private long[] values = new long[16];
        private int size;

        void add(long v) {
            if (size == values.length) {
                values = Arrays.copyOf(values, size * 2);
            }
            values[size++] = v;
        }

        int size() {
            return size;
        }

        long[] toArray() {
            return Arrays.copyOf(values, size);
        }

        int[] toIntArray() {
            int[] out = new int[size];
            for (int i = 0; i < size; i++) {
                out[i] = (int) values[i];
            }
            return out;
        }
    }
}
