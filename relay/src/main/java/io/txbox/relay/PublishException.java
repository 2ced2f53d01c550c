package io.txbox.relay;

import io.txbox.internal.Args;
import io.txbox.TxboxException;
import org.jspecify.annotations.Nullable;

/**
 * A publish the broker refused or did not confirm. {@link #retryable()} decides what the relay
 * does with the row: a retryable failure is tried again after a backoff (and dead-lettered
 * past the maximum attempts); a non-retryable one (a message too large for the broker, a
 * record the broker can never accept) goes to the dead-letter table at once.
 *
 * <p>A {@link Publisher} completes its stage with this exception to say which it is. Any
 * other exception is treated as retryable.
 */
public class PublishException extends TxboxException {
    private static final long serialVersionUID = 1L;

    private final boolean retryable;

    public PublishException(String message, @Nullable Throwable cause, boolean retryable) {
        super(Args.notNull(message, "message"), cause);
        this.retryable = retryable;
    }

    /** A failure worth trying again later: broker down, timeout, nack, unroutable. */
    public static PublishException retryable(String message, @Nullable Throwable cause) {
        return new PublishException(message, cause, true);
    }

    /** A failure that will repeat on every try: the row is dead-lettered at once. */
    public static PublishException permanent(String message, @Nullable Throwable cause) {
        return new PublishException(message, cause, false);
    }

    public boolean retryable() {
        return retryable;
    }
}
