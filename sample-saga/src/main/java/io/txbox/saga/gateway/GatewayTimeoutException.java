package io.txbox.saga.gateway;

/**
 * The gateway did not answer in time. As with a real gateway the charge may or may not have
 * happened; the caller must ask again with the same idempotency key to find out.
 */
public final class GatewayTimeoutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    GatewayTimeoutException(String key) {
        super("payment gateway timed out for key " + key);
    }
}
