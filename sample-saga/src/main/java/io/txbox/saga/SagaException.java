package io.txbox.saga;

/** Something the saga needs is missing or broken; the message says what and how to fix it. */
public final class SagaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SagaException(String message) {
        super(message);
    }

    public SagaException(String message, Throwable cause) {
        super(message, cause);
    }
}
