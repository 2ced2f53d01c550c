package io.txbox.inbox;

import io.txbox.Texts;
import io.txbox.TxboxException;

/**
 * A two-phase worker tried to complete or fail a claim it no longer holds: its lease expired
 * and another worker took the entry over (or an operator changed it). Nothing the late worker
 * sent was written; if it completed inside its own transaction, that transaction must be
 * rolled back.
 */
public class LeaseLostException extends TxboxException {
    private static final long serialVersionUID = 1L;

    private final String consumer;
    private final String key;
    private final int fencingToken;

    public LeaseLostException(String consumer, String key, int fencingToken) {
        super("consumer " + Texts.quote(consumer) + " lost its claim on key " + Texts.quote(key)
                + " (fencing token " + fencingToken + "): the lease was taken over; nothing was written");
        this.consumer = consumer;
        this.key = key;
        this.fencingToken = fencingToken;
    }

    public String consumer() {
        return consumer;
    }

    public String key() {
        return key;
    }

    /** The token the late worker held. */
    public int fencingToken() {
        return fencingToken;
    }
}
