package io.txbox;

import org.jspecify.annotations.Nullable;

/**
 * A failure that may succeed if the whole unit of work is tried again: a serialization
 * failure or deadlock, a lock or statement timeout, a lost connection, an exhausted pool, an
 * unreachable broker. Nothing was committed by the attempt that failed.
 */
public class RetryableException extends TxboxException {
    private static final long serialVersionUID = 1L;

    public RetryableException(String message, @Nullable Throwable cause) {
        super(message, cause, null);
    }

    public RetryableException(String message, @Nullable Throwable cause, @Nullable String sqlState) {
        super(message, cause, sqlState);
    }
}
