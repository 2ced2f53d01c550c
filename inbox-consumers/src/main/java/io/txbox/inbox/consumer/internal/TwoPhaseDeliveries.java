package io.txbox.inbox.consumer.internal;

import io.txbox.inbox.Claim;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.ParkedKeys;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.inbox.consumer.TwoPhaseHandler;
import org.jspecify.annotations.Nullable;

/**
 * Two-phase mode: each delivery is claimed in a {@link TwoPhaseStore}, handled outside any
 * transaction, and completed, or failed (counted) when the handler throws.
 */
final class TwoPhaseDeliveries implements Deliveries {
    private final TwoPhaseStore store;
    private final TwoPhaseHandler handler;
    // The store's parked keys when the consumer parks keys, else null.
    private final @Nullable ParkedKeys parked;

    TwoPhaseDeliveries(TwoPhaseStore store, TwoPhaseHandler handler, @Nullable ParkedKeys parked) {
        this.store = store;
        this.handler = handler;
        this.parked = parked;
    }

    /** Claim, the handler, complete. A lost lease or an unreachable store throws, which retries the delivery. */
    @Override
    public Outcome run(InboundMessage message, @Nullable String orderingKey) {
        Claim claim;
        try {
            claim = store.claim(message);
        } catch (KeyReuseException e) {
            return new Outcome(Outcome.Status.KEY_REUSED, null, 0, e.getMessage(), null);
        }
        switch (claim.status()) {
            case DUPLICATE:
                return new Outcome(Outcome.Status.DUPLICATE, claim.result(), claim.fencingToken(), null, null);
            case IN_FLIGHT:
                return new Outcome(Outcome.Status.IN_FLIGHT, null, claim.fencingToken(), claim.reason(), null);
            case DEAD:
                return new Outcome(Outcome.Status.DEAD, null, claim.fencingToken(), claim.reason(), null);
            case ACQUIRED:
            default:
                break;
        }
        if (parked != null && orderingKey != null && parked.parkIfParked(orderingKey, message)) {
            store.release(claim); // it runs when the key is resolved
            return new Outcome(Outcome.Status.PROCESSED, null, claim.fencingToken(), null, null);
        }
        byte[] result;
        try {
            result = handler.handle(message);
        } catch (Exception e) {
            return store.fail(claim, e);
        }
        store.complete(claim, result);
        return new Outcome(Outcome.Status.PROCESSED, result, claim.fencingToken(), null, null);
    }
}
