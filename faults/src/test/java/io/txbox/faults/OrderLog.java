package io.txbox.faults;

import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What happened in one order history, in milliseconds since it began: the writers'
 * transactions ({@link Write}) and the faults and relay starts and stops (events).
 */
final class OrderLog {
    private static final Logger log = LoggerFactory.getLogger(OrderLog.class);

    /** What became of a writer's transaction. */
    enum Outcome { COMMITTED, ROLLED_BACK, UNKNOWN }

    /**
     * One outbox row a writer sent: its key and the key's sequence number (the payload is
     * {@code key:seq}), its outbox id, its delay (0 if none), and when its transaction began,
     * inserted it and ended.
     */
    record Write(String stepKey, String key, long seq, long id, long delayMs, long beginMs, long insertMs, long endMs,
            Outcome outcome) {
        boolean delayed() {
            return delayMs > 0;
        }

        @Override
        public String toString() {
            return String.format("%s seq %d id %d: begin %d ms, insert %d ms, %s %d ms (held %d ms)%s", key, seq, id,
                    beginMs, insertMs, outcome == Outcome.COMMITTED ? "commit" : outcome.toString().toLowerCase(),
                    endMs, endMs - insertMs, delayMs > 0 ? ", delay " + delayMs + " ms" : "");
        }
    }

    /** A fault, a relay start or stop, a step of the history; {@code ms} since the writers began (negative before). */
    record Event(long ms, String what) {
        @Override
        public String toString() {
            return ms + " ms: " + what;
        }
    }

    private record Entry(long nanos, String what) {}

    private final String name;
    private volatile long startNanos = System.nanoTime();
    private volatile long startEpochMs = System.currentTimeMillis();
    private final List<Entry> events = new ArrayList<>();
    private final List<Write> writes = new ArrayList<>();

    OrderLog(String name) {
        this.name = name;
    }

    /** Times from here on count from now: the moment the writers begin. */
    void zero() {
        startEpochMs = System.currentTimeMillis();
        startNanos = System.nanoTime();
    }

    long now() {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }

    /** Milliseconds since the history began for a wall-clock time (a broker timestamp). */
    long sinceStart(long epochMs) {
        return epochMs - startEpochMs;
    }

    void event(String what) {
        Entry e = new Entry(System.nanoTime(), what);
        synchronized (this) {
            events.add(e);
        }
        log.info("[{}] {} ms: {}", name, now(), what);
    }

    synchronized void write(Write w) {
        writes.add(w);
    }

    synchronized List<Event> events() {
        return events.stream().map(e -> new Event(Math.floorDiv(e.nanos() - startNanos, 1_000_000), e.what())).toList();
    }

    synchronized List<Write> writes() {
        return List.copyOf(writes);
    }
}
