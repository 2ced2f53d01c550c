package io.txbox.bench;

import io.txbox.relay.RelayListener;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Recorder;

/** Counts what the relay reports, per second and in total, and notes when a target count was reached. */
final class RelayCounter implements RelayListener {
    final AtomicLong published = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    final AtomicLong dead = new AtomicLong();
    final AtomicLong batches = new AtomicLong();
    final Recorder batchLatencyMicros = new Recorder(3);
    final Timeline line;
    private volatile long target = Long.MAX_VALUE;
    private volatile long reachedAt;
    private volatile long firstAt;
    private volatile int firstCount;

    RelayCounter(Timeline line) {
        this.line = line;
    }

    /** A new target: {@link #await} waits for it even when an earlier, smaller one was reached. */
    void target(long count) {
        reachedAt = 0;
        this.target = count;
        if (published.get() >= count && reachedAt == 0) {
            reachedAt = System.nanoTime();
        }
    }

    long reachedAt() {
        return reachedAt;
    }

    long firstAt() {
        return firstAt;
    }

    /** Rows of the first confirmed batch: published before {@link #firstAt()}'s clock started. */
    int firstCount() {
        return firstCount;
    }

    @Override
    public void published(String destination, String broker, int count, Duration latency) {
        long now = System.nanoTime();
        if (firstAt == 0) {
            firstAt = now;
            firstCount = count;
        }
        long total = published.addAndGet(count);
        batches.incrementAndGet();
        batchLatencyMicros.recordValue(Math.max(0, latency.toNanos() / 1000));
        if (line != null) {
            line.record(count);
        }
        if (total >= target && reachedAt == 0) {
            reachedAt = now;
        }
    }

    @Override
    public void failed(String destination, String broker, int count) {
        failed.addAndGet(count);
    }

    @Override
    public void deadLettered(String destination, String broker, int count) {
        dead.addAndGet(count);
    }

    /** Waits until the target is reached; fails if nothing was published for {@code stall}. */
    void await(Duration stall) throws InterruptedException {
        long last = published.get();
        long lastChange = System.nanoTime();
        while (reachedAt == 0) {
            Thread.sleep(20);
            long now = published.get();
            if (now != last) {
                last = now;
                lastChange = System.nanoTime();
            } else if (System.nanoTime() - lastChange > stall.toNanos()) {
                throw new IllegalStateException("relay stalled: " + now + " of " + target + " published, nothing for "
                        + stall.toSeconds() + " s (failed " + failed.get() + ", dead-lettered " + dead.get() + ")");
            }
        }
    }
}
