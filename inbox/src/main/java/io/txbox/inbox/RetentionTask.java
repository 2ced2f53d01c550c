package io.txbox.inbox;

/**
 * A background task, started by {@link Inbox#retentionTask}, that purges completed entries
 * past the retention window. {@link #close()} stops it and waits briefly for a running batch.
 */
public interface RetentionTask extends AutoCloseable {
    /** Entries removed since the task started. */
    long purged();

    /** Stops the task. Idempotent. */
    @Override
    void close();
}
