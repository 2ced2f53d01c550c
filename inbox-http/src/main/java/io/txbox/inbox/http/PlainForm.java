package io.txbox.inbox.http;

import io.txbox.Texts;
import io.txbox.TxboxException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.inbox.http.HttpIdempotency.RequestHandler;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The form of {@link HttpIdempotency} for handlers without database effects: the handler runs,
 * then its response is stored in a transaction of the store's own. Beside {@link TransactionalForm}.
 */
final class PlainForm {
    private static final Logger log = LoggerFactory.getLogger(HttpIdempotency.class);

    private final TwoPhaseStore store;
    private final Responses responses;

    PlainForm(TwoPhaseStore store, Responses responses) {
        this.store = store;
        this.responses = responses;
    }

    /** Runs {@code handler}, then stores a response below 500 under {@code claim}, or releases it. */
    HttpResponseData run(RequestHandler handler, HttpRequestData request, @Nullable Claim claim) {
        HttpResponseData response = run(handler, request);
        if (claim == null) {
            return response;
        }
        try {
            if (response.status() >= 500) {
                // Not stored, per the draft: the client may retry and run it again.
                store.release(claim);
            } else {
                store.complete(claim, response.status(), responses.replayed(response.headers()), response.body());
            }
        } catch (LeaseLostException e) {
            log.warn("{} - response for key {} not stored: the claim was taken over (the request ran longer than "
                    + "the lease)", store.consumer(), Texts.quote(claim.key()));
        } catch (TxboxException e) {
            log.error("{} - response for key {} not stored; a retry after the lease runs it again: {}",
                    store.consumer(), Texts.quote(claim.key()), e.toString());
        }
        return response;
    }

    private HttpResponseData run(RequestHandler handler, HttpRequestData request) {
        try {
            return Objects.requireNonNull(handler.handle(request), "the request handler returned null");
        } catch (Exception e) {
            return responses.failed(request, e);
        }
    }
}
