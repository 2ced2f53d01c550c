package io.txbox.inbox.internal;

import io.txbox.inbox.Fingerprint;
import io.txbox.internal.Args;
import io.txbox.internal.KeyRules;
import java.time.Duration;

/**
 * The options every key-value two-phase store's builder has (Redis, DynamoDB): their defaults
 * and their checks, made as each option is set. The builders state the defaults and ranges in
 * their Javadoc.
 */
public final class StoreOptions {
    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(1);
    public static final int DEFAULT_MAX_RESULT_BYTES = 256 * 1024;

    private final String consumer;
    private final int resultBytesLimit;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private Duration lease = DEFAULT_LEASE;
    private Duration retention = DEFAULT_RETENTION;
    private int maxResultBytes = DEFAULT_MAX_RESULT_BYTES;
    private Fingerprint fingerprint = Fingerprint.sha256();

    /** Options of {@code consumer}'s store, whose {@code maxResultBytes} may be at most {@code resultBytesLimit}. */
    public StoreOptions(String consumer, int resultBytesLimit) {
        this.consumer = KeyRules.consumer(consumer);
        this.resultBytesLimit = resultBytesLimit;
    }

    public void maxAttempts(int maxAttempts) {
        this.maxAttempts = Args.atLeast(maxAttempts, 1, "maxAttempts");
    }

    public void lease(Duration lease) {
        this.lease = Args.between(lease, Duration.ofMillis(1), Duration.ofDays(1), "lease");
    }

    public void retention(Duration retention) {
        this.retention = Args.between(retention, Duration.ofSeconds(1), Duration.ofDays(365), "retention");
    }

    public void maxResultBytes(int maxResultBytes) {
        this.maxResultBytes = Args.between(maxResultBytes, 0, resultBytesLimit, "maxResultBytes");
    }

    public void fingerprint(Fingerprint fingerprint) {
        this.fingerprint = Args.configured(fingerprint, "fingerprint");
    }

    public String consumer() {
        return consumer;
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    /** The lease in milliseconds, at least 1. */
    public long leaseMillis() {
        return Math.max(1, lease.toMillis());
    }

    public long retentionMillis() {
        return retention.toMillis();
    }

    public int maxResultBytes() {
        return maxResultBytes;
    }

    public Fingerprint fingerprint() {
        return fingerprint;
    }
}
