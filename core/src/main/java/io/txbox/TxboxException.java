package io.txbox;

import org.jspecify.annotations.Nullable;

/**
 * Root of every exception txbox throws. All txbox exceptions are unchecked.
 *
 * <p>When the cause is a database error, {@link #sqlState()} carries its SQL state so callers
 * can branch without unwrapping.
 */
public class TxboxException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final @Nullable String sqlState;

    public TxboxException(String message) {
        this(message, null, null);
    }

    public TxboxException(String message, @Nullable Throwable cause) {
        this(message, cause, null);
    }

    public TxboxException(String message, @Nullable Throwable cause, @Nullable String sqlState) {
        super(message, cause);
        this.sqlState = sqlState;
    }

    /** The SQL state of the database error behind this exception, if there was one. */
    public @Nullable String sqlState() {
        return sqlState;
    }
}
