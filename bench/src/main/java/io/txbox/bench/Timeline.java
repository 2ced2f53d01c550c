package io.txbox.bench;

import java.util.concurrent.atomic.AtomicLongArray;

/** Events per second since a common start, for the throughput-over-time picture. */
final class Timeline {
    private static final int MAX_SECONDS = 6 * 3600;

    final String name;
    private final long startNanos;
    private final AtomicLongArray perSecond = new AtomicLongArray(MAX_SECONDS);
    private volatile int last = -1;

    Timeline(String name, long startNanos) {
        this.name = name;
        this.startNanos = startNanos;
    }

    void record(long n) {
        long s = (System.nanoTime() - startNanos) / 1_000_000_000L;
        int i = (int) Math.max(0, Math.min(MAX_SECONDS - 1, s));
        perSecond.addAndGet(i, n);
        if (i > last) {
            last = i;
        }
    }

    /** The series up to {@code seconds} (or the last event); empty seconds count as zero. */
    Html.Series series(int seconds) {
        int n = Math.max(1, Math.min(MAX_SECONDS, Math.max(seconds, last + 1)));
        double[] xs = new double[n];
        double[] ys = new double[n];
        for (int i = 0; i < n; i++) {
            xs[i] = i;
            ys[i] = perSecond.get(i);
        }
        return new Html.Series(name, xs, ys);
    }

    long total() {
        long t = 0;
        for (int i = 0; i <= last; i++) {
            t += perSecond.get(i);
        }
        return t;
    }
}
