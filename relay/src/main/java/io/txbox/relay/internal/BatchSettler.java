package io.txbox.relay.internal;

import io.txbox.internal.Backoff;
import io.txbox.relay.PublishRecord;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What each row's {@link RowOutcome} does to it, in the batch's transaction: a confirmed row is
 * deleted, a failed one retried after its backoff (blocking its lane until then, so no later row
 * of its key overtakes it), a hopeless one dead-lettered with the reason.
 */
final class BatchSettler {
    private static final Logger log = LoggerFactory.getLogger(BatchSettler.class);

    private final RelayStore store;
    private final String memberId;
    private final int maxAttempts;
    private final Backoff backoff;
    private final RandomGenerator random;

    BatchSettler(RelayStore store, String memberId, int maxAttempts, Backoff backoff, RandomGenerator random) {
        this.store = store;
        this.memberId = memberId;
        this.maxAttempts = maxAttempts;
        this.backoff = backoff;
        this.random = random;
    }

    /** Whether a row that failed with {@link RowOutcome.Kind#RETRY} is dead-lettered rather than retried. */
    static boolean givesUp(PublishRecord row, int maxAttempts) {
        return row.attempts() + 1 >= maxAttempts;
    }

    void settle(Connection c, List<PublishRecord> rows, short[] lanes, RowOutcome[] outcomes) throws SQLException {
        LongList confirmed = new LongList();
        LongList retryIds = new LongList();
        List<String> retryErrors = new ArrayList<>();
        LongList retryDelays = new LongList();
        LongList retryExtra = new LongList();
        LongList deadIds = new LongList();
        List<String> deadReasons = new ArrayList<>();
        LongList deadExtra = new LongList();
        Map<Short, Long> blocks = new HashMap<>();
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
                    log.warn("{} - dead-lettering {} (id {}): {}", memberId, row.stepKey(), row.id(), o.error());
                }
                case PERMANENT -> {
                    deadIds.add(row.id());
                    deadReasons.add(RowOutcome.clip("not retryable: " + o.error()));
                    deadExtra.add(1);
                    log.warn("{} - dead-lettering {} (id {}, destination {}): broker refused it for good: {}",
                            memberId, row.stepKey(), row.id(), row.destination(), o.error());
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
                        log.warn("{} - dead-lettering {} (id {}, destination {}) after {} attempts: {}",
                                memberId, row.stepKey(), row.id(), row.destination(), attempts, o.error());
                    } else {
                        long delay = backoff.delayMillis(attempts, random::nextDouble);
                        retryIds.add(row.id());
                        retryErrors.add(RowOutcome.clip(String.valueOf(o.error())));
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
        store.delete(c, confirmed.toArray());
        store.retry(c, retryIds.toArray(), retryErrors.toArray(String[]::new), retryDelays.toArray(), retryExtra.toIntArray());
        store.block(c, blocks);
        store.deadLetter(c, deadIds.toArray(), deadReasons.toArray(String[]::new), deadExtra.toIntArray());
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
