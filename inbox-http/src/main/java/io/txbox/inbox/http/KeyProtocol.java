package io.txbox.inbox.http;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.TxboxException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.TwoPhaseStore;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The key's protocol of {@link HttpIdempotency}: body limit, key header, claim, and the answer
 * to each state a key can be in (the class description's table).
 */
final class KeyProtocol {
    private static final Logger log = LoggerFactory.getLogger(HttpIdempotency.class);

    private final TwoPhaseStore store;
    private final Responses responses;
    private final String headerName;
    private final Predicate<HttpRequestData> keyRequired;
    private final Function<HttpRequestData, @Nullable String> tenant;
    private final int maxBodyBytes;

    KeyProtocol(TwoPhaseStore store, Responses responses, String headerName, Predicate<HttpRequestData> keyRequired,
            Function<HttpRequestData, @Nullable String> tenant, int maxBodyBytes) {
        this.store = store;
        this.responses = responses;
        this.headerName = headerName;
        this.keyRequired = keyRequired;
        this.tenant = tenant;
        this.maxBodyBytes = maxBodyBytes;
    }

    /** What runs once a request may run: with its acquired claim, or {@code null} when it has no key. */
    @FunctionalInterface
    interface Execution {
        HttpResponseData run(@Nullable Claim claim);
    }

    /**
     * Checks the body and the key, claims the key, and answers a key seen before; runs
     * {@code execution} once the request may run.
     */
    HttpResponseData answer(HttpRequestData request, Execution execution) {
        if (request.body().length > maxBodyBytes) {
            // Refused whole, keyed or not: a handler never sees a cut body.
            return Problems.problem(413, "Content Too Large", "The request body is larger than the limit of "
                    + maxBodyBytes + " bytes.");
        }
        String field = request.header(headerName);
        if (field == null) {
            if (keyRequired.test(request)) {
                return Problems.problem(400, "Bad Request", "This request requires an " + headerName + " header.");
            }
            return execution.run(null);
        }
        String key;
        try {
            key = KeyHeader.parse(headerName, field);
        } catch (InvalidInputException e) {
            return Problems.problem(400, "Bad Request", "Invalid " + e.getMessage() + ".");
        }
        InboundMessage message = RequestFingerprint.message(key, request, tenant.apply(request));
        Claim claim;
        try {
            claim = store.claim(message);
        } catch (KeyReuseException e) {
            return Problems.problem(422, "Unprocessable Content", "The " + headerName + " " + Texts.quote(key)
                    + " was already used for a different request (method, path or body differ).");
        } catch (InvalidInputException e) {
            return Problems.problem(400, "Bad Request", "Invalid " + headerName + ": " + e.getMessage());
        } catch (TxboxException e) {
            log.error("{} - cannot claim idempotency key {}: {}", store.consumer(), Texts.quote(key), e.toString());
            return responses.unavailable("The request could not be recorded; it did not run.");
        }
        return switch (claim.status()) {
            case DUPLICATE -> Responses.replay(claim);
            case IN_FLIGHT -> Problems.problem(409, "Conflict", "A request with the " + headerName + " "
                    + Texts.quote(key) + " is still being processed. Retry later.");
            case DEAD -> Problems.problem(500, "Internal Server Error", "The request with the " + headerName + " "
                    + Texts.quote(key) + " outlived its lease too often (it hung, or the server stopped) and "
                    + "will not run again.");
            case ACQUIRED -> execution.run(claim);
        };
    }
}
